# verdict: accept
# Ordinary research code whose standard library call may start a process the hard gate
# refuses: platform's processor name comes from `uname -p`. Under standard with the runtime
# gate (the default) that is a warning, not a rejection: the gate (and the exec guard behind
# it) refuses the process if the call starts one, and platform copes
# (tests/e2e/test_runtime_gate.py runs it).
import platform

print(platform.platform(), platform.python_version())  # expect: LB102
print(platform.uname().system, platform.processor())  # expect: LB102
