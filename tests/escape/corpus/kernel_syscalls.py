"""System calls that reach deep into the kernel and that an experiment never needs, each made
with harmless arguments (a bad reboot magic, a missing swap file, an invalid module)."""
import ctypes

from attack import A, sys_call

buf = ctypes.create_string_buffer(256)


def perf():
    attr = ctypes.create_string_buffer(128)
    ctypes.memmove(attr, (1).to_bytes(4, "little") + (128).to_bytes(4, "little"), 8)  # SOFTWARE
    return sys_call("perf_event_open", attr, 0, -1, -1, 0)


calls = [
    ("bpf", lambda: sys_call("bpf", 0, buf, 64)),
    ("perf_event_open", perf),
    ("userfaultfd", lambda: sys_call("userfaultfd", 1)),
    ("io_uring_setup", lambda: sys_call("io_uring_setup", 1, ctypes.create_string_buffer(120))),
    ("keyctl", lambda: sys_call("keyctl", 0, -3, 0)),
    ("add_key", lambda: sys_call("add_key", b"user", b"lbx", b"x", 1, -3)),
    ("request_key", lambda: sys_call("request_key", b"user", b"lbx-none", None, 0)),
    ("kexec_load", lambda: sys_call("kexec_load", 0, 0, None, 0)),
    ("kexec_file_load", lambda: sys_call("kexec_file_load", -1, -1, 0, None, 0)),
    ("init_module", lambda: sys_call("init_module", buf, 16, b"")),
    ("finit_module", lambda: sys_call("finit_module", -1, b"", 0)),
    ("delete_module", lambda: sys_call("delete_module", b"lbx_no_such_module", 0o4000)),
    ("reboot", lambda: sys_call("reboot", 0xfee1dead, 0, 0, None)),  # wrong magic2
    ("swapon", lambda: sys_call("swapon", b"/nonexistent-lbx-swap", 0)),
    ("swapoff", lambda: sys_call("swapoff", b"/nonexistent-lbx-swap")),
    ("acct", lambda: sys_call("acct", b"/nonexistent-lbx-acct")),
    ("personality", lambda: sys_call("personality", 0x0400000)),  # READ_IMPLIES_EXEC
    ("syslog", lambda: sys_call("syslog", 10, None, 0)),
    ("iopl", lambda: sys_call("iopl", 3)),
    ("ioperm", lambda: sys_call("ioperm", 0x80, 1, 1)),
    ("kcmp", lambda: sys_call("kcmp", 1, 1, 0, 0, 0)),
    ("pidfd_getfd", lambda: sys_call("pidfd_getfd", -1, 0, 0)),
    ("quotactl", lambda: sys_call("quotactl", 0, b"/", 0, None)),
    ("vhangup", lambda: sys_call("vhangup")),
    ("clone3", lambda: sys_call("clone3", buf, 64)),
]
for name, fn in calls:
    A.attempt(name, fn)
A.finish(reraise="io_uring_setup")
