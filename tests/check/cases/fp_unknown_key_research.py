# verdict: accept
# Research code whose names are chosen by flags: argparse attributes read by name, an
# optimizer looked up in torch.optim (a computed attribute of a module that is not
# sensitive: the LB112 warning, as before), literal choices on every path.
import argparse
import json
import os
import torch

p = argparse.ArgumentParser()
p.add_argument("--opt", default=None)
p.add_argument("--act", default="ReLU")
p.add_argument("--half", action="store_true")
p.add_argument("--resume", action="store_true")
args = p.parse_args()
for name in ["opt", "act", "half"]:
    print(name, getattr(args, name))
key = args.opt if args.opt else "lr"
print(getattr(args, key, None))
torch.manual_seed(0)
model = torch.nn.Linear(4, 4)
opt_name = args.opt or "Adam"
opt = getattr(torch.optim, opt_name)(model.parameters(), lr=1e-3)  # expect: LB112
act = getattr(torch.nn, args.act)()  # expect: LB112
dtype = getattr(torch, "float16" if args.half else "float32")
mode = "a" if args.resume else "w"
with open("log.txt", mode) as f:
    f.write("start\n")
sched = {"cosine": 1, "linear": 2}["cosine" if args.resume else "linear"]
os.makedirs("out", exist_ok=True)
with open(os.path.join("out", "final_info.json"), "w") as f:
    json.dump({"sched": sched}, f)
