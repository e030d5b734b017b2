"""pivot_root onto a directory of our own, and the `pivot_root(".", ".")` idiom."""
import os

from attack import A, sys_call

os.makedirs("newroot/old", exist_ok=True)
A.attempt("pivot_root", sys_call, "pivot_root", b"newroot", b"newroot/old")
A.attempt("pivot_root_dot", sys_call, "pivot_root", b".", b".")
A.finish(reraise="pivot_root")
