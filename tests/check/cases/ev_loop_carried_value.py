# verdict: reject
# A value bound late in a loop's body is there at the top of the next iteration.
import os
import sys
from os import system

name = "A"
for i in range(2):
    globals()[name]("id")  # expect: LB111
    name = sys.argv[1]

f = print
while True:
    f("id")  # expect: LB101
    f = os.system

g1 = print
g2 = print
g3 = print
for i in range(3):
    for j in range(3):
        g1("id")  # expect: LB101
        g1 = g2
    g2 = g3
    g3 = os.system
