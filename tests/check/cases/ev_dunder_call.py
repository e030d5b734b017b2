# verdict: reject
import os
os.system.__call__("id")  # expect: LB101
