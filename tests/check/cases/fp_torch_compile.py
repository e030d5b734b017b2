# verdict: accept
import torch
model = torch.nn.Identity()
fast = torch.compile(model)
