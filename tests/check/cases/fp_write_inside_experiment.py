# verdict: accept
import json
with open("results.json", "w") as f:
    json.dump({"a": 1}, f)
with open("run_0/log.txt", "a") as f:
    f.write("x")
