"""The default disk limit protects the host's disk whatever runs together, and labbox's work
after a run under --disk-limit is bounded by the budget it enforces.

Each test mounts a small file system of its own (root) to stand for a nearly full disk."""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON, labbox, run_dirs, write_exp

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a file system (root)")

WRITER = """
import time
chunk = b'x' * (1 << 20); n = 0; err = None; t = time.time()
try:
    with open("out.bin", "wb") as f:
        while time.time() - t < 30:
            f.write(chunk); f.flush(); n += 1; time.sleep(0.02)
except OSError as e:
    err = e
print("written_mib:", n, flush=True)
print("error:", repr(err), flush=True)
"""


@pytest.fixture
def small_fs(tmp_path):
    fs = tmp_path / "fs"
    fs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400m", "tmpfs", str(fs)], check=True)
    yield fs
    subprocess.run(["umount", "-l", str(fs)])


def used_fraction(path):
    v = os.statvfs(path)
    return 1 - v.f_bavail / v.f_blocks


def test_sweep_cells_share_the_default_disk_limit_and_keep_their_records(tmp_path, small_fs):
    exp = write_exp(tmp_path, WRITER)
    runs = small_fs / "runs"
    p = labbox("sweep", "--runs-dir", runs, "--policy", "permissive", "--python", PYTHON,
               "--seeds", "0-1", "--jobs", "2", "--budget", "60", exp)
    out = p.stdout + p.stderr
    assert "cannot write" not in out, out[-3000:]
    assert used_fraction(small_fs) < 0.9, out[-3000:]
    sweeps = list((runs / "sweeps").iterdir())
    assert len(sweeps) == 1, out[-3000:]
    doc = json.loads((sweeps[0] / "sweep.json").read_text())
    cells = [c for c in doc["cells"] if c]
    assert len(cells) == 2, json.dumps(doc)[:3000]
    for c in cells:
        assert c["status"] == "disk_limit", json.dumps(c)[:2000]
    for d in run_dirs(runs):
        if d.name == "sweeps":
            continue
        res = json.loads((d / "result.json").read_text())
        assert res["status"] == "disk_limit", json.dumps(res)[:2000]
        assert (d / "run.log").stat().st_size > 0


def test_runs_started_together_stop_at_the_free_space_floor(tmp_path, small_fs):
    """Two runs that each see the same free space each get half of it: the floor of free
    space every run keeps stops them before the disk is full, as disk_limit, records intact."""
    exp = write_exp(tmp_path, WRITER)
    runs = small_fs / "runs"
    procs = [subprocess.Popen([LABBOX, "run", "--json", "--policy", "permissive", "--python",
                               PYTHON, "--runs-dir", str(runs), "--budget", "60", str(exp)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=180) for p in procs]
    assert used_fraction(small_fs) < 0.99, outs
    statuses = []
    for (out, err), p in zip(outs, procs):
        res = json.loads(out)
        statuses.append(res["status"])
        rd = Path(res["run_dir"])
        assert json.loads((rd / "result.json").read_text())["status"] == res["status"]
        assert (rd / "run.log").stat().st_size > 0, err[-2000:]
        log = (rd / "run.log").read_text(errors="replace")
        assert "No space left" not in log, log[-2000:]
    assert statuses.count("disk_limit") >= 1, outs
    assert set(statuses) <= {"disk_limit", "success"}, outs
