# verdict: reject
# sorted/max with key= hand each name, and through it the module, to the experiment's function.
import sys

sorted(sys.modules, key=lambda n: sys.modules[n].system("id"))  # expect: LB111
max(sys.modules, key=lambda n: sys.modules[n].system("id"))  # expect: LB111
list(map(lambda n: sys.modules[n], sys.modules))  # expect: LB111
filter(None, sys.modules)  # expect: LB111
