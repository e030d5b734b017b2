"""In the style of AI-Scientist's templates: argparse --out_dir, os.makedirs, torch, numpy,
final_info.json and all_results.npy written into the output directory."""
import argparse
import json
import os
import pathlib
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLPDenoiser(nn.Module):
    def __init__(self, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None].float()], dim=1))


def evaluate(model, data):
    model.eval()
    with torch.no_grad():
        t = torch.zeros(len(data))
        return F.mse_loss(model(data, t), data).item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", type=str, default="run_0")
    parser.add_argument("--train_steps", type=int, default=100)
    parser.add_argument("--budget", type=float, default=300.0)
    config = parser.parse_args()

    torch.manual_seed(0)
    np.random.seed(0)
    pathlib.Path(config.out_dir).mkdir(parents=True, exist_ok=True)
    os.makedirs(os.path.join(config.out_dir, "plots"), exist_ok=True)

    start = time.time()
    final_infos, all_results = {}, {}
    datasets = ["circle", "dino", "line", "moons"]
    print(f"TIME_ESTIMATE: {len(datasets) * 30}s")
    for dataset_name in datasets:
        if time.time() - start > 0.8 * config.budget:
            print("TIME_GUARD: budget nearly spent, saving partial results")
            break
        data = torch.randn(256, 2)
        model = MLPDenoiser()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        losses = []
        for step in range(config.train_steps):
            t = torch.randint(0, 100, (len(data),))
            loss = F.mse_loss(model(data, t), data)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        eval_loss = evaluate(model, data)
        final_infos[dataset_name] = {"means": {"eval_loss": eval_loss,
                                               "training_time": time.time() - start}}
        all_results[dataset_name] = {"train_losses": losses}
        print(f"{dataset_name}_eval_loss: {eval_loss:.5f}")

    with open(os.path.join(config.out_dir, "final_info.json"), "w") as f:
        json.dump(final_infos, f)
    with open(os.path.join(config.out_dir, "all_results.npy"), "wb") as f:
        np.save(f, all_results)
