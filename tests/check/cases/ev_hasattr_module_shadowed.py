# verdict: reject
# hasattr is only a presence test while it is the builtin: rebound later in source order, in
# a loop, or asked with a name the check cannot read, the module is handed on.
import os
import sys


def probe():
    return hasattr(os, "system")  # expect: LB111


for i in range(2):
    if i:
        print(hasattr(sys, "ps1"))  # expect: LB111
    hasattr = lambda m, n: getattr(m, n)  # noqa: E731
