# verdict: accept
# DDP and logging code: the host's name, socket's exception classes in handlers, the family
# and type constants. None of these reaches the network.
import logging
import socket  # expect: LB201
from socket import gethostname  # expect: LB201

logging.basicConfig(level=logging.INFO)
host = socket.gethostname()
logging.info("rank 0 on %s (%s)", host, gethostname())
try:
    print(socket.AF_INET, socket.AF_INET6, socket.SOCK_STREAM, socket.has_ipv6)
except (socket.timeout, socket.error, socket.herror, socket.gaierror) as e:
    logging.warning("socket error: %s", e)
except socket.timeout:
    pass
