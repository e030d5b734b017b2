# verdict: reject
from os import system as run_it
run_it("id")  # expect: LB101
