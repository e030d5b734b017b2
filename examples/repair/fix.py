#!/usr/bin/env python3
"""An example repair command for `labbox run --repair-cmd` that needs no model.

labbox runs it on the host, as you, in a fresh copy of the experiment, with the verdict
(result.json) on stdin. It reads what went wrong and edits the copy:

  LB302 / LB303 (random operations without a seed): seeds `random` and numpy after the
      imports of the file the finding names;
  LB110 (a write outside the experiment directory), and a run that failed with
      "No such file or directory" or "Read-only file system" on a path it writes: the
      path becomes its file name, inside the experiment directory.

It prints what it changed, exits 0 when it changed something and 1 when it found nothing
it knows how to fix. labbox diffs the copy and runs it again.
"""
import json
import os
import re
import sys

verdict = json.load(sys.stdin)
changes = []


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def add_seed(path):
    text = read(path)
    if re.search(r"^\s*(np\.random|numpy\.random|random)\.seed\(", text, re.M):
        return
    lines = text.splitlines(keepends=True)
    last_import = -1
    for i, line in enumerate(lines):
        if re.match(r"(import|from)\s+\w", line):
            last_import = i
    seed = []
    if re.search(r"^import random\b|^from random\b", text, re.M):
        seed.append("random.seed(0)\n")
    if re.search(r"^import numpy as np\b", text, re.M):
        seed.append("np.random.seed(0)\n")
    elif re.search(r"^import numpy\b", text, re.M):
        seed.append("numpy.random.seed(0)\n")
    if not seed:
        lines.insert(last_import + 1, "import random\n")
        last_import += 1
        seed.append("random.seed(0)\n")
    lines[last_import + 1:last_import + 1] = seed
    write(path, "".join(lines))
    changes.append(f"{path}: seeded ({', '.join(s.strip() for s in seed)})")


def fix_path(path, bad):
    text = read(path)
    good = os.path.basename(bad.rstrip("/")) or "results.json"
    if bad not in text:
        return
    write(path, text.replace(bad, good))
    changes.append(f"{path}: '{bad}' -> '{good}' (inside the experiment directory)")


for f in verdict.get("findings") or []:
    file = f.get("file") or ""
    if not file or not os.path.isfile(file) or not file.endswith(".py"):
        continue
    if f.get("id") in ("LB302", "LB303"):
        add_seed(file)
    elif f.get("id") == "LB110":
        m = re.search(r"writes to '([^']+)'", f.get("message", ""))
        if m:
            fix_path(file, m.group(1))

failure = verdict.get("failure") or {}
for line in failure.get("evidence") or []:
    m = re.search(r"(?:No such file or directory|Read-only file system): '(/[^']+)'", line)
    if m:
        for root, _, names in os.walk("."):
            for name in names:
                if name.endswith(".py"):
                    fix_path(os.path.join(root, name)[2:], m.group(1))

for c in changes:
    print("fix:", c)
if not changes:
    print("fix: nothing I know how to fix in this verdict", file=sys.stderr)
    sys.exit(1)
