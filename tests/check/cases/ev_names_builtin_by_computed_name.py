# verdict: reject
# A module global (or a builtin) set by a computed name can be any builtin's name.
import sys

key = sys.argv[1]
globals()[key] = lambda m: m["os"].system("id")
print(len(sys.modules))  # expect: LB111
