"""labbox quickstart: ridge regression on synthetic data at three regularisation strengths.

Follows the experiment harness template: a fixed seed, a time budget (from LABBOX_BUDGET,
default 300 s), a one-condition pilot that prints TIME_ESTIMATE before the main loop, a time
guard at 80% of the budget, `condition: X` then `name: value` lines on stdout, results.json.
"""
import json
import os
import sys
import time

import numpy as np

N_TRAIN, N_TEST, N_FEATURES, NOISE = 2000, 1000, 50, 0.5
CONDITIONS = ["lambda_0.01", "lambda_1", "lambda_100"]


def make_data():
    w_true = np.random.randn(N_FEATURES)
    x = np.random.randn(N_TRAIN + N_TEST, N_FEATURES)
    y = x @ w_true + NOISE * np.random.randn(N_TRAIN + N_TEST)
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:], w_true


def run_condition(condition, data):
    lam = float(condition.split("_", 1)[1])
    x_tr, y_tr, x_te, y_te, w_true = data
    t0 = time.time()
    # Closed-form ridge solution, repeated a few times so the timing is measurable.
    for _ in range(150):
        w = np.linalg.solve(x_tr.T @ x_tr + lam * np.eye(N_FEATURES), x_tr.T @ y_tr)
    return {
        "train_mse": float(np.mean((x_tr @ w - y_tr) ** 2)),
        "test_mse": float(np.mean((x_te @ w - y_te) ** 2)),
        "weight_error": float(np.linalg.norm(w - w_true)),
        "fit_seconds": round(time.time() - t0, 4),
    }


def main():
    # === SETUP ===
    np.random.seed(42)  # deterministic
    start_time = time.time()
    time_budget = float(os.environ.get("LABBOX_BUDGET", "300"))  # seconds
    data = make_data()

    # === TIME ESTIMATE === (one-condition pilot)
    pilot_start = time.time()
    run_condition(CONDITIONS[0], data)
    per_condition = time.time() - pilot_start
    print(f"TIME_ESTIMATE: {per_condition * len(CONDITIONS):.2f}s")

    # === MAIN LOOP ===
    results = {}
    for condition in CONDITIONS:
        elapsed = time.time() - start_time
        if elapsed > 0.8 * time_budget:
            print(f"TIME_GUARD: {elapsed:.1f}s - saving partial results")
            break
        metrics = run_condition(condition, data)
        print(f"condition: {condition}")
        for key, val in metrics.items():
            print(f"{key}: {val}")
        results[condition] = metrics
        sys.stdout.flush()

    # === SAVE ===
    with open("results.json", "w") as f:
        json.dump(results, f, indent=2, default=str)
    print(f"Total time: {time.time() - start_time:.1f}s")


if __name__ == "__main__":
    main()
