"""New namespaces (a user namespace gives back every capability inside it): unshare, clone
with namespace flags, clone3, the unshare program, and setns into init's namespaces."""
import os
import subprocess

from attack import A, sys_call

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x10000000, 0x40000000, 0x20000000
SIGCHLD = 17


def clone(flags):
    r = sys_call("clone", flags | SIGCHLD, 0, 0, 0, 0)
    if r == 0:
        os._exit(0)
    os.waitpid(r, 0)
    return r


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    return sys_call("setns", fd, 0)


def program():
    p = subprocess.run(["unshare", "-Ur", "id", "-u"], capture_output=True, text=True)
    if p.returncode != 0:
        raise PermissionError(1, "unshare -Ur: " + p.stderr.strip()[:200])
    return p.stdout


A.attempt("unshare_user", sys_call, "unshare", CLONE_NEWUSER)
A.attempt("unshare_mount", sys_call, "unshare", CLONE_NEWNS)
A.attempt("unshare_net", sys_call, "unshare", CLONE_NEWNET)
A.attempt("clone_newuser", clone, CLONE_NEWUSER)
A.attempt("clone_newpid", clone, CLONE_NEWPID)
A.attempt("clone3", sys_call, "clone3", b"\0" * 88, 88)
A.attempt("unshare_program", program)
A.attempt("setns_own_user", setns, "/proc/self/ns/user")
A.attempt("setns_init_mnt", setns, "/proc/1/ns/mnt")
A.finish(reraise="unshare_user")
