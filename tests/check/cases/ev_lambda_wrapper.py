# verdict: reject
import os
run = lambda cmd: os.system(cmd)  # expect: LB101
run("id")
