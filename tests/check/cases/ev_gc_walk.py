# verdict: reject
# Walking every live object reaches os's namespace without naming os.
import gc  # expect: LB201
for o in gc.get_objects():  # expect: LB111
    if isinstance(o, dict) and "system" in o and "getcwd" in o:
        o["system"]("touch MARKER")
        break
