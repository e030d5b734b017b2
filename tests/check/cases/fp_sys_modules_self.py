# verdict: accept
# d2l's idiom (d2l/torch.py): `d2l = sys.modules[__name__]` at module level is the module
# itself, so `d2l.X` in its functions is the module global X. Nothing in the file can rebind
# __name__, and no module of the experiment is imported before the line.
import logging
import sys

import numpy as np

log = logging.getLogger(__name__)
d2l = sys.modules[__name__]


def synthetic_data(w, b, n):
    X = d2l.normal(0, 1, (n, len(w)))
    return d2l.matmul(X, w) + b


def describe(obj):
    return obj.__class__.__name__


normal = np.random.default_rng(0).normal
matmul = np.matmul
if __name__ == "__main__":
    y = synthetic_data(np.array([2.0, -3.4]), 4.2, 100)
    print(f"mean_y: {y.mean():.4f} {describe(y)} {d2l.__name__}")
