# verdict: accept
metrics = {"eval": 0.5, "exec": 1}
print(metrics["eval"])
