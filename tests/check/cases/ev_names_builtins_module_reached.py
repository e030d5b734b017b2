# verdict: reject
# len.__self__ is the builtins module: rebinding a builtin there needs no binding of the name.
import sys

print.__self__.sorted = lambda m: m["os"].system("id")
sorted(sys.modules)  # expect: LB111
