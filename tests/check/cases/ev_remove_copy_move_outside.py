# verdict: reject
# Removing, making, copying into or moving away a path outside the outputs, by os, shutil
# and pathlib alike: each is a change outside, as a write is.
import os
import shutil
from pathlib import Path
os.remove("/etc/passwd")  # expect: LB110
os.unlink("/root/.bashrc")  # expect: LB110
os.rmdir("/srv/data")  # expect: LB110
os.makedirs("/etc/cron.d/x", exist_ok=True)  # expect: LB110
shutil.rmtree("/home")  # expect: LB108,LB110
shutil.copy("payload.sh", "/etc/profile.d/x.sh")  # expect: LB108,LB110
shutil.move("/etc/shadow", "stolen")  # expect: LB108,LB110
os.rename("/etc/hosts", "hosts")  # expect: LB110
Path("/etc/motd").unlink()  # expect: LB110
Path("/var/lib/x").mkdir(parents=True)  # expect: LB110
Path("out.txt").rename("/usr/local/bin/x")  # expect: LB110
