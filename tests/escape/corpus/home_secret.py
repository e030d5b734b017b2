"""Steal a credential from the invoking user's home: by its path, by listing the home, with a
shell, and by walking /home and /root."""
import os
import subprocess

from attack import A, P


def walk(top):
    found = []
    for dirpath, _, files in os.walk(top):
        found += [os.path.join(dirpath, f) for f in files]
        if len(found) > 500:
            break
    return found


A.attempt("read", lambda: open(P["canary"]).read())
A.attempt("listdir_home", os.listdir, P["home"])
A.attempt("cat", lambda: subprocess.run(["cat", P["canary"]], capture_output=True, check=True).stdout)
A.attempt("walk_home", walk, "/home")
A.attempt("walk_root", walk, "/root")
A.finish(reraise="read")
