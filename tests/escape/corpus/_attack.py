"""Staged next to every hostile experiment as attack.py: records what the attack tried.

An attack calls `A.attempt(name, fn, ...)` for each thing it tries; the outcome (a value, or the
exception with its errno) goes to report.json in the experiment's directory. `A.finish()`
prints the `attempts:` and `succeeded:` metric lines and, unless told otherwise, raises the
error of the attack's main attempt again, so that labbox's verdict is about what the sandbox
did to the attack. The host-side test never trusts this report for containment: it only
makes failure messages readable.
"""
import ctypes
import errno
import json
import os
import sys

try:
    with open("params.json") as _f:
        P = json.load(_f)
except OSError:
    P = {}

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86_64 system call numbers (the corpus skips these attacks elsewhere).
NR = {
    "ptrace": 101, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "unshare": 272, "setns": 308, "clone": 56, "clone3": 435, "bpf": 321,
    "perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249,
    "userfaultfd": 323, "io_uring_setup": 425, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169,
    "swapon": 167, "swapoff": 168, "acct": 163, "personality": 135, "syslog": 103,
    "process_vm_readv": 310, "process_vm_writev": 311, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsmount": 432, "mount_setattr": 442, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    "sethostname": 170, "prlimit64": 302, "pidfd_open": 434, "pidfd_send_signal": 424,
    "pidfd_getfd": 438, "kcmp": 312, "iopl": 172, "ioperm": 173, "quotactl": 179,
    "lookup_dcookie": 212, "vhangup": 153, "clock_adjtime": 305,
}


def sys_call(name, *args):
    """The raw system call NAME; returns its result or raises OSError (PermissionError for
    EPERM) exactly as the kernel answered."""
    nr = NR[name] if isinstance(name, str) else name
    cargs = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(nr), *cargs)
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (name, os.strerror(e)))
    return r


def check(r, what="call"):
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))
    return r


def _short(v):
    try:
        json.dumps(v)
        s = v
    except (TypeError, ValueError):
        s = repr(v)
    if isinstance(s, (str, bytes)) and len(s) > 300:
        s = s[:300]
    if isinstance(s, bytes):
        s = s.decode("latin-1")
    return s


class Attack:
    def __init__(self):
        self.results = {}
        self.errors = {}
        self.order = []
        self.notes = {}

    def attempt(self, name, fn, *args, **kw):
        self.order.append(name)
        try:
            v = fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - an attack records whatever stopped it
            self.results[name] = {"ok": False, "error": type(e).__name__,
                                  "errno": getattr(e, "errno", None),
                                  "errname": errno.errorcode.get(getattr(e, "errno", None) or -1),
                                  "message": str(e)[:300]}
            self.errors[name] = e
            return None
        self.results[name] = {"ok": True, "value": _short(v)}
        return v

    def ok(self, name):
        return self.results.get(name, {}).get("ok", False)

    def note(self, key, value):
        self.notes[key] = _short(value)

    def write(self):
        with open("report.json", "w") as f:
            json.dump({"results": self.results, "notes": self.notes}, f, indent=1)

    def finish(self, reraise=True):
        """Write report.json, print the metric lines, and raise the error of REraise (the name
        of an attempt; True: the first attempt that failed) so labbox's verdict names it."""
        self.write()
        if P.get("hold"):
            import time
            time.sleep(P["hold"])  # the host samples the processes meanwhile
        print("attempts: %d" % len(self.results))
        print("succeeded: %d" % sum(1 for r in self.results.values() if r["ok"]))
        sys.stdout.flush()
        if reraise is True:
            for name in self.order:
                if name in self.errors:
                    raise self.errors[name]
        elif reraise and reraise in self.errors:
            raise self.errors[reraise]


A = Attack()
