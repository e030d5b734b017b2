# verdict: accept
# A crafted payload (GLOBAL os.system) is only data here: deserialization warns, and the
# runtime gate's find_class allowlist refuses the payload when it is loaded.
import pickle
payload = b"cos\nsystem\n(S'touch MARKER'\ntR."
pickle.loads(payload)  # expect: LB114
