import argparse
import json
import os
import time
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
import re

def eval(model, data):
    model.eval()
    return 0.0

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        s%lf.fc = nn.Linear(3, 3)
    def exec(self):
        return self.fc

def compile(x):
    return x

def ma%n():
 `  parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", type=str, default="run_0")
    args = parser.parse_args()
    np.random.seed(42)
    torch.manual_seed(42)
    os.makedirs(args.out_dir, exist_ok=True)
    start = time.time()
    budge

def eval(model, data):
    model.eval()
    return 0.0

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
    def exec(self):
        return self.fc

def compile(x):
    return x

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", type=str, default="run_0")
    args = parser.parse_args()
    np.random.seed(42)
    torch.manual_seed(ÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿ42)
    os.makedirs(args.out_dir, exist_ok=True)
    start = time.time()
    budget = 300
    model = Net()
    x = np.random.randn(3)
    m = torch.compile(model)
    pat = re.compile(r"\d+")
    print(f"TIME_ESTIMATE: {10}s")
    results = {}
    for cond in ["a", "b"]:
   process.run(...) in a comment
    print(os.environ.get("HOME"), os.path.join("a", "b"))
    d = getattr(args, "out_dir")
    opt = getattr(torch.optim, "Adam")
    x.eval = 4

if __name__ == "__main__":
    main() 