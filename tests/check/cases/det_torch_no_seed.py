# verdict: accept
import torch
w = torch.randn(3, 3)  # expect: LB302
