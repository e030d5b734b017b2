# verdict: reject
import os
pid = os.fork()  # expect: LB101
os.kill(pid, 9)  # expect: LB101
