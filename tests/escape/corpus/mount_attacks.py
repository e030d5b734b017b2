"""Change the mount table: mount a tmpfs, bind the root, remount the root read-write, unmount
the covers that hide the home (to reveal a credential) and /tmp, use the new mount API
(open_tree, fsopen, mount_setattr), and run the set-user-ID mount and umount programs."""
import ctypes
import os
import subprocess

from attack import A, P, sys_call

MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC = 1, 32, 4096, 16384
MNT_DETACH = 2
os.makedirs("mnt", exist_ok=True)


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def prog(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise PermissionError(1, "%s: exit %d: %s" % (argv[0], p.returncode, p.stderr.strip()[:200]))
    return p.stdout


A.attempt("mount_tmpfs", sys_call, "mount", b"none", b"mnt", b"tmpfs", 0, None)
A.attempt("bind_root", sys_call, "mount", b"/", b"mnt", None, MS_BIND | MS_REC, None)
A.attempt("remount_root_rw", sys_call, "mount", None, b"/", None, MS_REMOUNT | MS_BIND, None)
A.attempt("umount_home_cover", sys_call, "umount2", P["home"].encode(), MNT_DETACH)
A.attempt("umount_tmp", sys_call, "umount2", b"/tmp", MNT_DETACH)
A.attempt("open_tree", sys_call, "open_tree", -100, b"/", 1)  # OPEN_TREE_CLONE
A.attempt("fsopen", sys_call, "fsopen", b"tmpfs", 0)
A.attempt("mount_setattr", sys_call, "mount_setattr", -100, b"/", 0,
          ctypes.byref(MountAttr(0, 1, 0, 0)), ctypes.sizeof(MountAttr))
A.attempt("mount_program", prog, "/usr/bin/mount", "-t", "tmpfs", "none", "mnt")
A.attempt("umount_program", prog, "/usr/bin/umount", "-l", P["home"])
A.attempt("read_canary", lambda: open(P["canary"]).read())
A.finish(reraise="mount_tmpfs")
