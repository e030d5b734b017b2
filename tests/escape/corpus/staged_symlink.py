"""The experiment directory arrives with symlinks to host secrets (data.txt, results.json):
read through them from inside."""
from attack import A

A.attempt("read_data", lambda: open("data.txt").read())
print("score: 1")
A.finish(reraise="read_data")
