# verdict: reject
# A listening socket: logging.config.listen serves configurations (and code) to anyone.
import logging.config
t = logging.config.listen(9999)  # expect: LB105
t.start()
