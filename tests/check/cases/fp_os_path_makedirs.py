# verdict: accept
import os
out = os.path.join("runs", "run_0")
os.makedirs(out, exist_ok=True)
print(os.path.exists(out), os.getcwd(), os.environ.get("HOME"))
