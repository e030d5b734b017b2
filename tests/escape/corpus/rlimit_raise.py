"""Raise the resource limits labbox set (hard limits included), then go past the limit the run
was given: processes (KIND=pids) or memory (KIND=memory)."""
import os
import resource
import time

from attack import A, P

INF = resource.RLIM_INFINITY


def raise_limit(res):
    soft, hard = resource.getrlimit(res)
    resource.prlimit(0, res, (INF, INF))
    return (soft, hard, resource.getrlimit(res))


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.prlimit(0, resource.RLIMIT_NOFILE, (hard + 1, hard + 1))


A.attempt("raise_core", raise_limit, resource.RLIMIT_CORE)
A.attempt("raise_nofile", raise_nofile)
A.attempt("raise_nproc", raise_limit, resource.RLIMIT_NPROC)
A.attempt("raise_data", raise_limit, resource.RLIMIT_DATA)
A.attempt("raise_as", raise_limit, resource.RLIMIT_AS)
A.write()
if P["kind"] == "pids":
    made = 0

    def forks():
        global made
        while made < P["limit"] + 30:
            if os.fork() == 0:
                time.sleep(60)
                os._exit(0)
            made += 1
    A.attempt("fork_past_limit", forks)
    print("forked: %d" % made, flush=True)
    time.sleep(1)
else:
    blocks = []

    def alloc():
        for _ in range(P["alloc_mb"] // 16):
            blocks.append(b"\x01" * (16 << 20))
    A.attempt("alloc_past_limit", alloc)
    print("allocated_mb: %d" % (len(blocks) * 16), flush=True)
A.finish(reraise="fork_past_limit" if P["kind"] == "pids" else "alloc_past_limit")
