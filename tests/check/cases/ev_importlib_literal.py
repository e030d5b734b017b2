# verdict: reject
import importlib  # expect: LB201
sub = importlib.import_module("subprocess")  # expect: LB102
