"""A fork bomb, bounded: every child forks a grandchild and every process then sleeps, until
fork fails or MAX_TOTAL forks were made (so an unenforced limit cannot take the host down)."""
import os
import time

from attack import A, P

made = 0


def child():
    try:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    except OSError:
        pass
    time.sleep(120)
    os._exit(0)


def bomb():
    global made
    while made < P["max_total"]:
        if os.fork() == 0:
            child()
        made += 1
    return made


A.attempt("fork", bomb)
print("forked: %d" % made, flush=True)
time.sleep(1)  # let the host see the peak
A.finish()
