# verdict: accept
# Deserialization that can run code warns (research loads its own pickles); the safe forms
# are quiet.
import json
import marshal  # expect: LB201
import pickle
import numpy as np
import torch
import yaml
with open("data_batch_1", "rb") as f:
    batch = pickle.load(f, encoding="bytes")  # expect: LB114
code = marshal.loads(b"")  # expect: LB114
state = torch.load("ckpt.pt")  # expect: LB114
state = torch.load("ckpt.pt", weights_only=True)
arr = np.load("obj.npy", allow_pickle=True)  # expect: LB114
arr = np.load("w.npy")
cfg = yaml.load(open("c.yaml"), Loader=yaml.Loader)  # expect: LB114
cfg = yaml.load(open("c.yaml"), Loader=yaml.SafeLoader)
cfg = yaml.safe_load(open("c.yaml"))
cfg = json.load(open("c.json"))
