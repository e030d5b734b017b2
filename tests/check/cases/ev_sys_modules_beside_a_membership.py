# verdict: reject
# A membership test next to it does not excuse handing the module table on.
import sys

if "os" in sys.modules:
    mods = [sys.modules]  # expect: LB111
    mods[0]["os"].system("id")
print([k for k in sys.modules])  # expect: LB111
