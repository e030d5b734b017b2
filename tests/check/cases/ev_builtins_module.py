# verdict: reject
import builtins  # expect: LB201
builtins.eval("1 + 1")  # expect: LB103
