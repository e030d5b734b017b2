"""Parallel data loading in research code: a multiprocessing pool, DataLoader workers, numpy
and torch, and the experiment pickling its own objects into its output directory."""
import json
import multiprocessing as mp
import os
import pickle
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def featurize(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(8).tolist()


def main():
    np.random.seed(0)
    torch.manual_seed(0)
    start = time.time()
    budget = 300
    os.makedirs("out", exist_ok=True)
    print(f"TIME_ESTIMATE: {30}s")
    with mp.Pool(2) as pool:
        feats = pool.map(featurize, range(16))
    x = torch.tensor(feats, dtype=torch.float32)
    ds = TensorDataset(x, torch.arange(len(feats)))
    total = 0.0
    for xb, _ in DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=False):
        if time.time() - start > 0.8 * budget:
            print("TIME_GUARD: stopping early")
            break
        total += float(xb.sum())
    with open("out/features.pkl", "wb") as f:
        pickle.dump({"feats": feats, "total": total}, f)
    torch.save({"x": x}, "out/x.pt")
    np.save("out/feats.npy", np.array(feats))
    print(f"total: {total}")
    with open("results.json", "w") as f:
        json.dump({"total": total}, f)


if __name__ == "__main__":
    main()
