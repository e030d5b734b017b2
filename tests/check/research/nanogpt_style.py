"""nanoGPT-like template: config dataclass, torch, a checkpoint written inside out_dir."""
import argparse
import json
import math
import os
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 65
    n_embd: int = 32


class TinyLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size)

    def forward(self, idx, targets=None):
        logits = self.head(self.emb(idx))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)),
                                                            targets.view(-1))
        return logits, loss


def get_lr(it, warmup=10, lr=1e-3):
    return lr * it / warmup if it < warmup else lr * 0.5 * (1 + math.cos(math.pi * it / 100))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", type=str, default="run_0")
    parser.add_argument("--max_iters", type=int, default=50)
    args = parser.parse_args()
    torch.manual_seed(1337)
    np.random.seed(1337)
    os.makedirs(args.out_dir, exist_ok=True)
    cfg = GPTConfig()
    model = TinyLM(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = np.random.randint(0, cfg.vocab_size, size=10_000)
    budget_s = 600
    t_start = time.time()
    print(f"TIME_ESTIMATE: {args.max_iters * 0.05:.0f}s")
    train_log = []
    for it in range(args.max_iters):
        if time.time() - t_start > 0.8 * budget_s:
            print("TIME_GUARD: stopping early")
            break
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it)
        ix = torch.from_numpy(np.random.randint(0, len(data) - cfg.block_size - 1, (8,)))
        x = torch.stack([torch.from_numpy(data[i:i + cfg.block_size]) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + cfg.block_size]) for i in ix])
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        train_log.append({"iter": it, "loss": loss.item()})
    print(f"final_train_loss: {train_log[-1]['loss']:.4f}")
    torch.save(model.state_dict(), os.path.join(args.out_dir, "ckpt.pt"))
    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
        json.dump({"final_train_loss": train_log[-1]["loss"]}, f)


if __name__ == "__main__":
    main()
