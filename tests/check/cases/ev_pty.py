# verdict: reject
import pty  # expect: LB107
pty.spawn("/bin/sh")  # expect: LB107
