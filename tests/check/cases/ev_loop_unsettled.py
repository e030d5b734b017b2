import os  # expect: LB002
# verdict: reject
# A value handed down a chain longer than the loop walks: not analysed, never passed.
a0 = print
a1 = print
a2 = print
a3 = print
a4 = print
a5 = print
a6 = print
a7 = print
a8 = print
a9 = print
a10 = print
a11 = print
for i in range(20):
    a0("id")
    a0 = a1
    a1 = a2
    a2 = a3
    a3 = a4
    a4 = a5
    a5 = a6
    a6 = a7
    a7 = a8
    a8 = a9
    a9 = a10
    a10 = a11
    a11 = os.system
