# verdict: reject
# A key that is a literal on one path and anything on another (argv, a dict's value, a loop
# over a list holding input(), a parameter's caller) may name any global: the computed path.
import sys
from os import system

a = sys.argv[1] if len(sys.argv) > 1 else "A"
globals()[a]("id")  # expect: LB111

if len(sys.argv) > 2:
    b = sys.argv[2]
else:
    b = "B"
vars()[b]("id")  # expect: LB111

cfg = {}
c = cfg.get("name", "C")
locals()[c]("id")  # expect: LB111

for d in ["D", input()]:
    globals().get(d)("id")  # expect: LB111

e = sys.argv[1] or "E"
globals()[e]("id")  # expect: LB111

f = "F"
if len(sys.argv) > 3:
    f = sys.argv[3]
globals()[f]("id")  # expect: LB111


def run(g="G"):
    globals()[g]("id")  # expect: LB111


run(sys.argv[1])
