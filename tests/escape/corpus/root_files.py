"""Read what only root may read: password hashes, ssh host keys, root's home, kernel memory."""
import glob

from attack import A


def read(path):
    with open(path, "rb") as f:
        return f.read(4096).decode("latin-1")


A.attempt("shadow", read, "/etc/shadow")
A.attempt("gshadow", read, "/etc/gshadow")
for i, key in enumerate(sorted(glob.glob("/etc/ssh/ssh_host_*_key"))):
    A.attempt("ssh_host_key%d" % i, read, key)
A.attempt("root_bash_history", read, "/root/.bash_history")
A.attempt("kcore", read, "/proc/kcore")
A.finish(reraise="shadow")
