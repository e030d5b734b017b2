"""Connect to the host's AF_UNIX sockets: socket files of daemons (in the home, in /run) and
an abstract-namespace socket (the kind X11 and many daemons listen on)."""
import socket

from attack import A, P


def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(addr)
    s.sendall(P["tag"].encode())
    return s.recv(100)


for i, path in enumerate(P.get("paths", [])):
    A.attempt("path%d" % i, connect, path)
if P.get("abstract"):
    A.attempt("abstract", connect, "\0" + P["abstract"])
A.finish()
