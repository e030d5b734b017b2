"""The seed's experiment harness template, filled in: numpy only."""
import json
import sys
import time

import numpy as np


def run_condition(condition, n_iter=200):
    w = np.zeros(4)
    x = np.random.randn(64, 4)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0])
    for _ in range(n_iter):
        grad = x.T @ (x @ w - y) / len(y)
        w -= condition * grad
    return {"mse": float(np.mean((x @ w - y) ** 2))}


def main():
    # === SETUP ===
    np.random.seed(42)
    start_time = time.time()
    time_budget = 300
    conditions = [0.01, 0.05, 0.1]

    # === TIME ESTIMATE ===
    t0 = time.time()
    run_condition(conditions[0], n_iter=10)
    print(f"TIME_ESTIMATE: {(time.time() - t0) * 20 * len(conditions):.1f}s")

    # === MAIN LOOP ===
    results = {}
    for condition in conditions:
        elapsed = time.time() - start_time
        if elapsed > 0.8 * time_budget:
            print(f"TIME_GUARD: {elapsed:.1f}s — saving partial results")
            break
        metrics = run_condition(condition)
        print(f"condition: {condition}")
        for key, val in metrics.items():
            print(f"{key}: {val}")
        results[condition] = metrics

    # === SAVE ===
    with open("results.json", "w") as f:
        json.dump(results, f, indent=2, default=str)
    print(f"Total time: {time.time() - start_time:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
