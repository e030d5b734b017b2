# verdict: reject
def f(:  # expect: LB001
    pass
