"""Signal the sandbox's init (pid 1: labbox's helper, which kills the whole tree on SIGTERM and
reports the run's status): SIGKILL, SIGSTOP, SIGTERM, SIGINT; then signal every process
(kill -1). The run must still end normally and be recorded as this process's exit."""
import os
import signal
import time

from attack import A

for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL):
    A.attempt("init_" + sig.name, os.kill, 1, sig)
A.attempt("parent_SIGKILL", os.kill, os.getppid(), signal.SIGKILL)
A.attempt("all_SIGSTOP", os.kill, -1, signal.SIGSTOP)
A.attempt("all_SIGTERM", os.kill, -1, signal.SIGTERM)
time.sleep(1)
print("still_running: 1")
A.finish(reraise=False)
