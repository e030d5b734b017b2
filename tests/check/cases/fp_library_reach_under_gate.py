# verdict: accept
# Ordinary research code whose standard library calls may reach a capability the hard gate
# refuses: platform's processor name comes from `uname -p`, dictConfig imports the handler
# classes it is named, iter_modules imports a path hook. Under standard with the runtime gate
# (the default) each is a warning, not a rejection: the gate refuses the process or import if
# the call makes it, and these calls cope (tests/e2e/test_runtime_gate.py runs them).
import logging.config
import pkgutil  # expect: LB201
import platform

print(platform.platform(), platform.python_version())  # expect: LB102
logging.config.dictConfig({"version": 1, "root": {"level": "INFO"}})  # expect: LB104
plugins = [m.name for m in pkgutil.iter_modules(["models"])]  # expect: LB104
