# verdict: accept
# In the sandbox HOME is /tmp, private and writable: a cache under `~` is written there
# however the code spells the home (the runtime gate and the run agree).
import os
from pathlib import Path

open(os.path.join(os.path.expanduser("~"), ".cache", "a.json"), "w")
open(os.path.expanduser("~/.cache/b.json"), "w")
open(os.path.join(os.environ["HOME"], ".cache", "c.json"), "w")
open(os.path.join(os.getenv("HOME"), "d.json"), "w")
open(os.path.join(os.environ.get("HOME", "/nowhere"), "e.json"), "w")
(Path.home() / ".cache" / "f.json").write_text("1")
Path("~/.cache/g.json").expanduser().write_text("1")
print("accuracy: 0.5")
