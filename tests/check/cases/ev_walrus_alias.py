# verdict: reject
import os
if (r := os.popen):  # expect: LB101
    r("id")  # expect: LB101
