# verdict: reject
# args: --runtime-gate off
# Without a gate that refuses, the static check is the only one and rejects it; with one
# (the default), the finding is a warning and the gate refuses the call where it happens
# (tests/e2e/test_runtime_gate.py).
# resolve_name imports whatever module the string names and returns its attribute.
import pkgutil  # expect: LB201
pkgutil.resolve_name("os:system")("touch MARKER")  # expect: LB104
