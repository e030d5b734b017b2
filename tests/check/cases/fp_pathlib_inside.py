# verdict: accept
from pathlib import Path
out = Path("run_0")
out.mkdir(exist_ok=True)
(out / "notes.txt").write_text("ok")
