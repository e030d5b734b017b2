# verdict: reject
import os
f = os.system
g = f
g("id")  # expect: LB101
