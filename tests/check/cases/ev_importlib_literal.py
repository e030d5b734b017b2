# verdict: reject
import importlib  # expect: LB201
sock = importlib.import_module("socket")  # expect: LB105
