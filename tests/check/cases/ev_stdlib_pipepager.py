# verdict: reject
# args: --runtime-gate off
# Without a gate that refuses, the static check is the only one and rejects it; with one
# (the default), a process reached through a library call is a warning, and the gate and the
# exec guard refuse it where it happens (tests/e2e/test_runtime_gate.py).
# A standard library helper that starts a process (pydoc's pager runs a shell command).
import pydoc  # expect: LB201
pydoc.pipepager("text", "touch MARKER")  # expect: LB102
show = pydoc.pipepager
show("text", "id")  # expect: LB102
