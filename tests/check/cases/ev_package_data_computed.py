# verdict: reject
# What a package's data is read from, named at run time or by a banned module, is judged as
# that import.
import importlib.resources  # expect: LB201
import sys

print(importlib.resources.files(sys.argv[1]))  # expect: LB104
print(importlib.resources.files("ctypes"))  # expect: LB106
