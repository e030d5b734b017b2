# verdict: reject
from pathlib import Path
Path("/home/user/.bashrc").write_text("id")  # expect: LB110
