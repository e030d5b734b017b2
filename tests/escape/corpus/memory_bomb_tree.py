"""A memory bomb spread over several processes, so that a per-process limit alone would let
the tree take CHILDREN times the limit: each child touches PER_CHILD_MB in 16 MiB blocks."""
import os
import signal
import time

from attack import A, P


def child():
    blocks = []
    try:
        for _ in range(P["per_child_mb"] // 16):
            blocks.append(b"\x01" * (16 << 20))
    except MemoryError:
        os._exit(3)
    time.sleep(3)
    os._exit(0)


def bomb():
    pids = []
    for _ in range(P["children"]):
        pid = os.fork()
        if pid == 0:
            child()
        pids.append(pid)
    codes = []
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        codes.append(os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st))
    A.note("children", codes)
    if any(c == 3 for c in codes):
        raise MemoryError("a child could not allocate %d MiB" % P["per_child_mb"])
    if any(c == -signal.SIGKILL for c in codes):
        raise MemoryError("a child was killed (SIGKILL) while allocating")
    return codes


A.attempt("bomb", bomb)
A.finish()
