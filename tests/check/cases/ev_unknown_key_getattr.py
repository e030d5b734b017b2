# verdict: reject
# getattr's name, literal on one path only, may be any attribute.
import os
import sys

a = sys.argv[1] if len(sys.argv) > 1 else "getcwd"
getattr(os, a)("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "getcwd"
getattr(os, b)("id")  # expect: LB111

c = os.environ.get("NAME", "getcwd")
getattr(os, c)("id")  # expect: LB111

for d in ["getcwd", input()]:
    getattr(os, d)("id")  # expect: LB111

e = (sys.argv[1] or "getcwd").lower()
getattr(os, e)("id")  # expect: LB111


def run(f="getcwd"):
    getattr(os, f)("id")  # expect: LB111


run(sys.argv[1])

import dbm  # expect: LB201
k = sys.argv[1] if len(sys.argv) > 1 else "cache"
setattr(dbm, k, ["ctypes"])  # expect: LB104
