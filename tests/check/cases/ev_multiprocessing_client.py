# verdict: reject
# args: --runtime-gate off
# Without a gate that refuses, the static check is the only one and rejects it; with one
# (the default), the finding is a warning and the gate refuses the call where it happens
# (tests/e2e/test_runtime_gate.py).
# multiprocessing's connection client is a socket to any address.
import multiprocessing.connection as c
c.Client(("127.0.0.1", 9))  # expect: LB105
