"""Hard-link host files into exp/ (which outlives the run on the host, owned by the
experiment): root-only files, labbox's binary, the interpreter."""
import os

from attack import A, P

for i, target in enumerate(P["targets"]):
    A.attempt("link%d" % i, os.link, target, "link%d" % i)
A.finish()
