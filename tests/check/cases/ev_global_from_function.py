# verdict: reject
def setup():
    global h
    import os as h
setup()
h.system("id")  # expect: LB101
