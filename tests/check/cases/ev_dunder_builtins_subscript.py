# verdict: reject
__builtins__["eval"]("1")  # expect: LB103
