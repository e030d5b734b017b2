# verdict: reject
import os
a, b = print, os.system
b("id")  # expect: LB101
