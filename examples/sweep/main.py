"""labbox sweep example: ridge regression, one regularisation strength and one seed per run.

`labbox sweep examples/sweep` runs every lambda x noise condition with seeds 0-4 (labbox.yaml's
`sweep:`), each cell one ordinary run with `--lam L --noise N --seed S`, and writes the
per-condition mean, standard deviation and 95% interval of every metric to sweep.json.
"""
import argparse
import os
import time

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--lam", type=float, required=True)
p.add_argument("--noise", type=float, required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()

np.random.seed(a.seed)
budget = float(os.environ.get("LABBOX_BUDGET", "300"))
start = time.time()
n_train, n_test, n_features = 500, 500, 20
w_true = np.random.randn(n_features)
x = np.random.randn(n_train + n_test, n_features)
y = x @ w_true + a.noise * np.random.randn(n_train + n_test)
x_tr, y_tr, x_te, y_te = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
print(f"TIME_ESTIMATE: {0.5:.1f}s")
if time.time() - start > 0.8 * budget:
    print("TIME_GUARD: stopping early")
w = np.linalg.solve(x_tr.T @ x_tr + a.lam * np.eye(n_features), x_tr.T @ y_tr)
print(f"train_mse: {float(np.mean((x_tr @ w - y_tr) ** 2)):.6f}")
print(f"test_mse: {float(np.mean((x_te @ w - y_te) ** 2)):.6f}")
print(f"weight_error: {float(np.linalg.norm(w - w_true)):.6f}")
