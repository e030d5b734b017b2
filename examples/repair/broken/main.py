# A small experiment with two planted bugs for the repair loop to fix (see ../README.md):
# its random numbers are never seeded, and its results go to a path outside the experiment
# directory.
import json
import random

xs = []
for _ in range(1000):
    xs.append(random.random())
mean = sum(xs) / len(xs)
print("mean:", mean)
with open("/data/out/results.json", "w") as f:
    json.dump({"mean": mean}, f)
