import os
def f():
    global g
    g = os.system
f()
g("x")  # labbox: allow[LB101] reason
from os import *
x = f"{chr(115)}ystem"
