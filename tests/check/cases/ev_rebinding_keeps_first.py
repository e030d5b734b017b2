# verdict: reject
import subprocess as sp  # expect: LB102
import numpy as sp
x = sp.zeros(3)
