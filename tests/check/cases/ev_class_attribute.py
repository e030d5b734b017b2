# verdict: reject
import os
class Runner:
    go = os.system  # expect: LB101
Runner.go("id")
