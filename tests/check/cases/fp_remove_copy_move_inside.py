# verdict: accept
# The same calls on the experiment's own files, /tmp and the outputs: research code does
# this all the time (checkpoints rotated, a best model copied, scratch cleaned).
import os
import shutil
from pathlib import Path
os.makedirs("runs/run_0", exist_ok=True)
shutil.copy("runs/run_0/last.pt", "runs/run_0/best.pt")  # expect: LB108
shutil.move("ckpt.tmp", "ckpt.pt")  # expect: LB108
os.remove("ckpt_old.pt")
shutil.rmtree("/tmp/scratch", ignore_errors=True)  # expect: LB108
Path("figures").mkdir(exist_ok=True)
Path("results.tmp").replace("results.json")
os.rename("a.json", "b.json")
