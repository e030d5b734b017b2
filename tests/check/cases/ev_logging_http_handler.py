# verdict: reject
# args: --runtime-gate off
# Without a gate that refuses, the static check is the only one and rejects it; with one
# (the default), the finding is a warning and the gate refuses the call where it happens
# (tests/e2e/test_runtime_gate.py).
# A logging handler that connects out when a record is emitted.
import logging
import logging.handlers
h = logging.handlers.HTTPHandler("127.0.0.1:9", "/log")  # expect: LB105
logging.getLogger("x").addHandler(h)
from logging.handlers import SocketHandler
SocketHandler("127.0.0.1", 9)  # expect: LB105
