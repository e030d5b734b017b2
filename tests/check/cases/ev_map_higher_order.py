# verdict: reject
import os
list(map(os.system, ["id"]))  # expect: LB101
