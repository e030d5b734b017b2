"""Tamper with the run directory around exp/ (labbox's own records) and with a sibling run:
plain writes, a symlink climbing out of exp/, renaming exp/ away, chmod."""
import os

from attack import A, P

exp = os.getcwd()
tag = P["tag"]
ink = tag[::-1]  # the text written; never printed


def write(path, mode="w"):
    with open(path, mode) as f:
        f.write(ink + "\n")


for name in ("result.json", "run.log", "manifest.json", "environment.txt"):
    A.attempt("write_" + name, write, os.path.join("..", name), "a" if name == "run.log" else "w")
A.attempt("create_in_run_dir", write, os.path.join("..", "pwned-" + tag))
A.attempt("mkdir_in_runs_dir", os.mkdir, os.path.join("..", "..", "pwned-" + tag))


def through_symlink():
    os.symlink("..", "up")
    write(os.path.join("up", "pwned-link-" + tag))


A.attempt("write_through_symlink", through_symlink)
A.attempt("rename_exp", os.rename, exp, exp + "-moved")
A.attempt("chmod_run_dir", os.chmod, "..", 0o777)
for i, path in enumerate(P.get("siblings", [])):
    A.attempt("sibling%d" % i, write, path)
A.finish()
