"""Kill a process of the host by its pid (plain kill, its process group, a pidfd), and then
every process this process may signal (kill -1)."""
import os
import signal

from attack import A, P, sys_call

pid = P["victim_pid"]
A.attempt("kill", os.kill, pid, signal.SIGKILL)
A.attempt("killpg", os.killpg, P["victim_pgid"], signal.SIGKILL)
A.attempt("stop", os.kill, pid, signal.SIGSTOP)


def pidfd():
    fd = sys_call("pidfd_open", pid, 0)
    return sys_call("pidfd_send_signal", fd, signal.SIGKILL, None, 0)


A.attempt("pidfd", pidfd)
if P.get("kill_all"):
    A.attempt("kill_all", os.kill, -1, signal.SIGKILL)
A.finish(reraise="kill")
