"""Daemons that try to outlive the run, each in its own way:
 - double-forked, setsid, every fd closed, SIGTERM/SIGHUP/SIGINT ignored, exec'd into
   `sleep` (no trace of the experiment left in its command line);
 - a shell `nohup setsid ... &` loop that traps TERM and HUP;
 - a hopper that forks a new copy of itself every 50 ms and lets the old one exit, so no
   pid lives long enough to be killed by pid;
 - a subreaper that adopts its orphans.
Then the main process exits at once (or sleeps, with TAIL_SLEEP)."""
import ctypes
import os
import signal
import subprocess
import time

from attack import A, P

libc = ctypes.CDLL(None)
IGNORE = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1)


def detach():
    os.setsid()
    for s in IGNORE:
        signal.signal(s, signal.SIG_IGN)
    fd = os.open("/dev/null", os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)


def double_fork():
    if os.fork() == 0:
        detach()
        if os.fork() == 0:
            libc.prctl(15, b"kworker/0:1", 0, 0, 0)  # PR_SET_NAME
            open("double_fork.started", "w").close()
            os.execv("/bin/sleep", ["sleep", "600"])
        os._exit(0)
    os.wait()


def shell():
    subprocess.run(["/bin/sh", "-c",
                    "trap '' TERM HUP INT; nohup setsid /bin/sh -c "
                    "'trap \"\" TERM HUP INT; touch shell.started; "
                    "while :; do sleep 1; done' >/dev/null 2>&1 &"], check=True)


def hopper():
    if os.fork() == 0:
        detach()
        open("hopper.started", "w").close()
        while True:
            time.sleep(0.05)
            try:
                if os.fork() != 0:
                    os._exit(0)
            except OSError:
                pass


def subreaper():
    if os.fork() == 0:
        detach()
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        if os.fork() == 0:
            if os.fork() == 0:
                open("subreaper.started", "w").close()
                while True:
                    time.sleep(1)
            os._exit(0)
        while True:
            try:
                os.wait()
            except ChildProcessError:
                time.sleep(1)


for name, fn in (("double_fork", double_fork), ("shell", shell), ("hopper", hopper),
                 ("subreaper", subreaper)):
    A.attempt(name, fn)
for _ in range(100):
    if all(os.path.exists(n + ".started") for n in ("double_fork", "shell", "hopper", "subreaper")):
        break
    time.sleep(0.05)
started = sum(os.path.exists(n + ".started") for n in ("double_fork", "shell", "hopper", "subreaper"))
print("daemons_started: %d" % started)
time.sleep(1)  # long enough for the host to see them
print("DAEMONS-STARTED", flush=True)
A.finish(reraise=False)
if P.get("tail_sleep"):
    time.sleep(P["tail_sleep"])
