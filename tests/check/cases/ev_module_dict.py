# verdict: reject
import os
os.__dict__["execv"]("/bin/sh", ["sh"])  # expect: LB101
