# verdict: reject
# A logging handler that connects out when a record is emitted.
import logging
import logging.handlers
h = logging.handlers.HTTPHandler("127.0.0.1:9", "/log")  # expect: LB105
logging.getLogger("x").addHandler(h)
from logging.handlers import SocketHandler
SocketHandler("127.0.0.1", 9)  # expect: LB105
