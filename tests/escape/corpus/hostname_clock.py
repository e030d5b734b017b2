"""Change the host's name and clock (a day ahead: certificates, logs and cron all follow)."""
import ctypes
import socket
import time

from attack import A, P, sys_call


class Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


future = int(time.time()) + 86400
A.attempt("sethostname", socket.sethostname, P["name"])
A.attempt("settimeofday", sys_call, "settimeofday", ctypes.byref(Timeval(future, 0)), None)
A.attempt("clock_settime", sys_call, "clock_settime", 0, ctypes.byref(Timespec(future, 0)))
A.note("hostname_inside", socket.gethostname())
A.finish(reraise="settimeofday")
