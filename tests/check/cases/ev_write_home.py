# verdict: reject
import os
open(os.path.expanduser("~/.ssh/authorized_keys"), "a")  # expect: LB110
