# verdict: reject
__builtins__.exec("x = 1")  # expect: LB103
