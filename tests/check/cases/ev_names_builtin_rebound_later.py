# verdict: reject
# Bound after the read in source order, but before it at run time (a loop, a function).
import sys


def count():
    return len(sys.modules)  # expect: LB111


for _ in range(2):
    print(sorted(sys.modules))  # expect: LB111
    sorted = lambda m: m["os"].system("id")
len = lambda m: m["os"].system("id")
count()
