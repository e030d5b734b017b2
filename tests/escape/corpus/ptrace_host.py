"""Trace a host process (PTRACE_SEIZE, PTRACE_ATTACH), read its memory (process_vm_readv,
/proc/PID/mem), and trace a child of our own."""
import ctypes
import os
import time

from attack import A, P, sys_call

pid = P["victim_pid"]
PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE = 0, 16, 0x4206


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def vm_read():
    buf = ctypes.create_string_buffer(64)
    local = Iovec(ctypes.cast(buf, ctypes.c_void_p), 64)
    remote = Iovec(0x400000, 64)
    return sys_call("process_vm_readv", pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)


def own_child():
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    try:
        return sys_call("ptrace", PTRACE_SEIZE, child, 0, 0)
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


A.attempt("seize", sys_call, "ptrace", PTRACE_SEIZE, pid, 0, 0)
if not P.get("control"):
    A.attempt("attach", sys_call, "ptrace", PTRACE_ATTACH, pid, 0, 0)
    A.attempt("process_vm_readv", vm_read)
    A.attempt("proc_mem", lambda: open("/proc/%d/mem" % pid, "rb").read(16))
    A.attempt("trace_own_child", own_child)
    A.attempt("traceme", sys_call, "ptrace", PTRACE_TRACEME, 0, 0, 0)
A.finish(reraise="seize")
