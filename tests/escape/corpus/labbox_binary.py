"""Replace or corrupt the labbox binary: through its path, and through /proc/PID/exe of the
sandbox's init (which runs labbox's image: the runc CVE-2019-5736 route)."""
import os

from attack import A, P

target = P["labbox"]


def overwrite():
    with open(target, "r+b") as f:
        f.write(b"\x7fELF-PWNED")


def replace():
    with open("evil", "wb") as f:
        f.write(b"#!/bin/sh\necho pwned\n")
    os.chmod("evil", 0o755)
    os.replace("evil", target)


def proc_exe(pid):
    with open("/proc/%s/exe" % pid, "r+b") as f:
        f.write(b"\x7fELF-PWNED")


A.attempt("overwrite", overwrite)
A.attempt("replace", replace)
A.attempt("chmod", os.chmod, target, 0o777)
A.attempt("truncate", os.truncate, target, 0)
A.attempt("unlink", os.unlink, target)
A.attempt("rename", os.rename, target, target + ".old")
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    if int(pid) != os.getpid():
        A.attempt("proc_%s_exe" % pid, proc_exe, pid)
A.finish()
