# verdict: accept
# The usual research layout: helpers draw random numbers, main() seeds every library first
# and then calls them (also through a helper that seeds); recursion does not loop.
import random

import numpy as np
import torch


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_data():
    return np.random.randn(10), random.randint(0, 5)


def walk(n):
    if n:
        return walk(n - 1) + torch.randn(1)
    return torch.zeros(1)


def main():
    set_seed(0)
    make_data()
    walk(3)


if __name__ == "__main__":
    main()
