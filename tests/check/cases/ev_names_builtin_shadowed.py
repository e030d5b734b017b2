# verdict: reject
# A builtin's name rebound by the experiment is the experiment's function.
import sys

len = lambda m: m["os"].system("id")
len(sys.modules)  # expect: LB111


def sorted(m):
    return m["os"].system("id")


sorted(sys.modules)  # expect: LB111


def show(print):
    print(sys.modules)  # expect: LB111
