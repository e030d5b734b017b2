# verdict: reject
# A name the check cannot read, an f-string or a concatenation: what hasattr is
# asked cannot be told, as for getattr(os, <computed>).
import os
import sys

name = sys.argv[1] if len(sys.argv) > 1 else "getpid"
print(hasattr(os, name))  # expect: LB111
print(hasattr(os, f"{name}"))  # expect: LB111
print(hasattr(os, "get" "pid"))  # expect: LB111
