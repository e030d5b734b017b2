# verdict: reject
code = compile("print(1)", "<s>", "exec")  # expect: LB103
exec(code)  # expect: LB103
