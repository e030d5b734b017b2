# policy: strict
# verdict: reject
# `~` is the sandbox's HOME, its private /tmp, which strict does not let a run write.
import os  # expect: LB201
open(os.path.expanduser("~/.ssh/authorized_keys"), "a")  # expect: LB110
