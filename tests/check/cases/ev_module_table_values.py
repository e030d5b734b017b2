# verdict: reject
# The values of the module table (and of a module's namespace) are the modules and functions.
import os
import sys

print(sorted(sys.modules.values()))  # expect: LB111
pairs = list(sys.modules.items())  # expect: LB111
for m in list(sys.modules.values()):  # expect: LB111
    f = getattr(m, "system", None)
    if f:
        f("id")
[f for n, f in vars(os).items() if n == "system"][0]("id")  # expect: LB111
table = dict(sys.modules)  # expect: LB111
print(len(sys.modules.copy()))  # expect: LB111
vars(os).setdefault("system")("id")  # expect: LB101
