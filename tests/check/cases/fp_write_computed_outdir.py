# verdict: accept
import argparse
import json
import os
p = argparse.ArgumentParser()
p.add_argument("--out_dir", default="run_0")
a = p.parse_args()
with open(os.path.join(a.out_dir, "final_info.json"), "w") as f:
    json.dump({}, f)
