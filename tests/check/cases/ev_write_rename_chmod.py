# verdict: reject
# Moving a file into place, or re-permissioning one, outside the outputs.
import os
os.replace("results.json", "/etc/cron.d/x")  # expect: LB110
os.rename("a", "/var/lib/b")  # expect: LB110
os.chmod("/etc/shadow", 0o666)  # expect: LB110
os.replace("tmp.json", "results.json")
os.chmod("run.sh", 0o755)
