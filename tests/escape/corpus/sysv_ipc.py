"""Attach to the host's System V shared memory segment and message queue by their keys (and
look for them in /proc/sysvipc)."""
import ctypes

from attack import A, P, check, libc

libc.shmat.restype = ctypes.c_void_p


def shm():
    shmid = check(libc.shmget(ctypes.c_int(P["shm_key"]), ctypes.c_size_t(0), 0), "shmget")
    addr = libc.shmat(shmid, None, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        check(-1, "shmat")
    data = ctypes.string_at(addr, 64)
    ctypes.memmove(addr, b"OVERWRITTEN", 11)
    return data


def msg():
    qid = check(libc.msgget(ctypes.c_int(P["msg_key"]), 0), "msgget")
    buf = ctypes.create_string_buffer(512)
    n = check(libc.msgrcv(qid, buf, ctypes.c_size_t(500), ctypes.c_long(0), 0o4000), "msgrcv")
    return buf.raw[8:8 + n]


A.attempt("shm", shm)
A.attempt("msg", msg)
A.attempt("proc_sysvipc_shm", lambda: open("/proc/sysvipc/shm").read()[:4000])
A.attempt("proc_sysvipc_msg", lambda: open("/proc/sysvipc/msg").read()[:4000])
A.finish(reraise="shm")
