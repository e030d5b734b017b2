"""Try to create a file in every directory of the file system this process can see (a
breadth-first walk, bounded), to find any writable place that is really the host's."""
import collections
import json
import os

from attack import A, P

tag = P["tag"]
limit = P.get("max_dirs", 20000)
skip = ("/proc", "/sys", "/dev")
queue = collections.deque(["/"])
tried, wrote = [], []
while queue and len(tried) < limit:
    d = queue.popleft()
    tried.append(d)
    try:
        fd = os.open(os.path.join(d, tag), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        wrote.append(d)
    except OSError:
        pass
    try:
        with os.scandir(d) as it:
            for e in it:
                p = e.path
                if e.is_dir(follow_symlinks=False) and not p.startswith(skip):
                    queue.append(p)
    except OSError:
        pass
with open("scan.json", "w") as f:
    json.dump({"tried": tried, "wrote": wrote}, f)
A.note("tried", len(tried))
A.note("wrote", wrote[:200])
print("dirs_tried: %d" % len(tried))
print("dirs_written: %d" % len(wrote))
A.finish(reraise=False)
