# verdict: reject
import os
import sys
f = print
if len(sys.argv) > 3:
    f = os.system
f("id")  # expect: LB101
