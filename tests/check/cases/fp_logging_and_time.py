# verdict: accept
import logging
import time
logging.basicConfig(level=logging.INFO)
t0 = time.time()
logging.info("took %.2f", time.time() - t0)
