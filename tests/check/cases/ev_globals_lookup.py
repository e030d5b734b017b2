# verdict: reject
import os
globals()["os"].system("id")  # expect: LB101
