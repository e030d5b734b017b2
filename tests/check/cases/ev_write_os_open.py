# verdict: reject
import os
fd = os.open("/etc/passwd", os.O_WRONLY | os.O_APPEND)  # expect: LB110
