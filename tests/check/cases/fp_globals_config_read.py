# verdict: accept
# nanoGPT's configurator: module globals read to compare their types and log the config.
import os
import sys
batch_size = 12
learning_rate = 6e-4
config_keys = [k for k, v in globals().items() if not k.startswith("_") and isinstance(v, (int, float, bool, str))]
for arg in sys.argv[1:]:
    key, val = arg.split("=")
    if key in globals():
        if type(globals()[key]) == type(1):
            globals()[key] = int(val)
        print(f"Overriding: {key} = {globals()[key]}")
config = {k: globals()[k] for k in config_keys}
print(config)
os.makedirs("out", exist_ok=True)
