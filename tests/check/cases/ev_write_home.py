# verdict: reject
# `~` is the sandbox's HOME, its private /tmp; its start-up and credential files stay refused:
# a mode without the sandbox (ssh without a remote labbox, Colab) runs in the real home.
import os
open(os.path.expanduser("~/.ssh/authorized_keys"), "a")  # expect: LB110
