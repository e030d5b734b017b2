# verdict: reject
import os as o
o.system("id")  # expect: LB101
