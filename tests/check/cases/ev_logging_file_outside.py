# verdict: reject
# Logging to a file outside the outputs.
import logging
import logging.handlers
logging.basicConfig(filename="/var/log/exp.log", level=logging.INFO)  # expect: LB110
logging.FileHandler("/root/x.log")  # expect: LB110
logging.handlers.RotatingFileHandler("/etc/x.log")  # expect: LB110
logging.FileHandler("train.log")
