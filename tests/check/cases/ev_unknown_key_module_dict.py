# verdict: reject
# A module's namespace (vars(m), m.__dict__, the builtins) subscripted by a key that is a
# literal on one path only.
import builtins  # expect: LB201
import os
import sys

a = sys.argv[1] if len(sys.argv) > 1 else "getcwd"
vars(os)[a]("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "getcwd"
os.__dict__[b]("id")  # expect: LB111

cfg = {}
c = cfg.get("name", "print")
builtins.__dict__[c]("id")  # expect: LB111

for d in ["print", input()]:
    __builtins__.__dict__[d]("id")  # expect: LB111


def run(e="getcwd"):
    vars(os).get(e)("id")  # expect: LB111


run(sys.argv[1])
