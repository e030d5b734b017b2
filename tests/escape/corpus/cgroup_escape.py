"""Leave the run's cgroup for the root cgroup of every hierarchy, raise its memory limit,
and then allocate twice the limit (which must still be enforced)."""
import glob
import os

from attack import A, P

pid = str(os.getpid())


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


A.note("cgroup_before", open("/proc/self/cgroup").read())
for path in sorted(glob.glob("/sys/fs/cgroup/*/cgroup.procs") + glob.glob("/sys/fs/cgroup/cgroup.procs")
                   + glob.glob("/sys/fs/cgroup/unified/cgroup.procs")):
    A.attempt("join:" + path, write, path, pid)
for line in open("/proc/self/cgroup").read().splitlines():
    _, ctrl, rel = line.split(":", 2)
    if ctrl == "memory":
        base = "/sys/fs/cgroup/memory" + rel
        A.attempt("raise_limit", write, base + "/memory.limit_in_bytes", "-1")
        A.attempt("raise_memsw", write, base + "/memory.memsw.limit_in_bytes", "-1")
    if ctrl == "":
        for name in ("memory.max", "memory.swap.max"):
            A.attempt("raise_" + name, write, "/sys/fs/cgroup" + rel + "/" + name, "max")
A.note("cgroup_after", open("/proc/self/cgroup").read())
A.write()
print("allocating", flush=True)
blocks = []
for i in range(P["alloc_mb"] // 16):
    blocks.append(b"\x01" * (16 << 20))
print("allocated_mb: %d" % (len(blocks) * 16))
A.finish(reraise=False)
