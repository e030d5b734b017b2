"""Read other processes' environments and command lines: a host process by its pid, the
sandbox's init (a fork of labbox, with labbox's environment and, unless it is wiped, labbox's
command line, which any process may read), and every pid visible."""
import os

from attack import A, P


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("latin-1")


A.attempt("victim_environ", read, "/proc/%d/environ" % P["victim_pid"])
A.attempt("victim_cmdline", read, "/proc/%d/cmdline" % P["victim_pid"])
A.attempt("init_environ", read, "/proc/1/environ")
A.attempt("init_cmdline", read, "/proc/1/cmdline")
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    A.attempt("environ_" + pid, read, "/proc/%s/environ" % pid)
A.attempt("own_environ", lambda: dict(os.environ))
A.finish(reraise="victim_environ")
