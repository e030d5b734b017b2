# verdict: reject
def f(x=eval("1")):  # expect: LB103
    return x
