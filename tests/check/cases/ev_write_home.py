# policy: strict
# verdict: reject
# `~` is the sandbox's HOME, its private /tmp, which strict does not let a run write (a mode
# without the sandbox, where `~` is the real home, refuses it under standard too).
import os  # expect: LB201
open(os.path.expanduser("~/.ssh/authorized_keys"), "a")  # expect: LB110
