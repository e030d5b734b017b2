"""Burn CPU past the time budget in processes that ignore SIGTERM, some in their own session."""
import os
import signal

from attack import A

signal.signal(signal.SIGTERM, signal.SIG_IGN)


def spin():
    while True:
        pass


def burner(new_session):
    if os.fork() == 0:
        if new_session:
            os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        spin()


for i in range(3):
    A.attempt("burner%d" % i, burner, i % 2 == 1)
print("progress: 1", flush=True)
print("BURNING", flush=True)
A.write()
spin()
