"""Grokking-style template: several seeds, a results dict per seed, results.json."""
import argparse
import json
import os
import random
import time
from collections import defaultdict

import numpy as np
import torch
from torch import nn


def make_data(p, frac, rng):
    pairs = [(a, b) for a in range(p) for b in range(p)]
    rng.shuffle(pairs)
    cut = int(frac * len(pairs))
    return pairs[:cut], pairs[cut:]


def train(seed, p=23, epochs=20):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    train_set, val_set = make_data(p, 0.5, rng)
    model = nn.Sequential(nn.Embedding(p, 32), nn.Flatten(), nn.Linear(64, p))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.tensor(train_set)
    y = (x[:, 0] + x[:, 1]) % p
    for _ in range(epochs):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    xv = torch.tensor(val_set)
    acc = (model(xv).argmax(-1) == (xv[:, 0] + xv[:, 1]) % p).float().mean().item()
    return {"val_acc": acc, "final_loss": loss.item()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out_dir", default="run_0")
    ap.add_argument("--time_budget", type=float, default=120)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    start = time.perf_counter()
    pilot = time.perf_counter()
    train(0, epochs=1)
    print("TIME_ESTIMATE: %.1fs" % ((time.perf_counter() - pilot) * 20 * 3))
    results = defaultdict(dict)
    for seed in range(3):
        elapsed = time.perf_counter() - start
        if elapsed >= 0.8 * args.time_budget:
            print(f"TIME_GUARD: {elapsed:.1f}s")
            break
        metrics = train(seed)
        print(f"condition: seed_{seed}")
        for k, v in metrics.items():
            print(f"{k}: {v:.4f}")
        results[f"seed_{seed}"] = metrics
    with open(os.path.join(args.out_dir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
