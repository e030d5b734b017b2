# verdict: reject
import subprocess as sp  # expect: LB102
def main():
    sp.run(["id"])  # expect: LB102
import numpy as sp
