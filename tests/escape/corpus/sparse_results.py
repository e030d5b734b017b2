"""A results.json of 64 GiB (sparse: no disk used) and one that never ends: a collector that
reads whole files exhausts labbox's memory."""

from attack import A


def sparse(name, size):
    with open(name, "wb") as f:
        f.truncate(size)
        f.seek(0)
        f.write(b'{"score": ')


A.attempt("results.json", sparse, "results.json", 64 << 30)
A.attempt("final_info.json", sparse, "final_info.json", 64 << 30)
print("score: 1")
A.finish(reraise=False)
