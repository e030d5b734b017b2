"""FIFOs under every name labbox collects or writes in a run directory: a reader that opens
one the usual way waits for a writer forever."""
import os

from attack import A, P

for name in P["names"]:
    A.attempt("fifo_" + name, os.mkfifo, name)
print("score: 1")
A.finish(reraise=False)
