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


MANY_FILES = """
import os, time
n = 0; t = time.time()
try:
    for d in range(100000):
        os.mkdir(f"d{d}")
        for f in range(100):
            os.close(os.open(f"d{d}/f{f}", os.O_CREAT | os.O_WRONLY)); n += 1
        if time.time() - t > 17:
            break
except OSError as e:
    print("stopped:", e)
print("files:", n, flush=True)
time.sleep(1000)
"""


def test_bringing_exp_back_from_its_image_ends_with_the_budget(tmp_path):
    """Under --disk-limit exp/ is an image whose files are brought back after the run: how
    many there are is the experiment's choice, so that work ends where budget and grace end
    (the image keeps what was not brought back, and result.json says so)."""
    exp = write_exp(tmp_path, MANY_FILES)
    runs = tmp_path / "runs"
    budget, grace = 20, 1
    t0 = time.monotonic()
    p = labbox("run", "--json", "-q", "--python", PYTHON, "--runs-dir", runs, "--budget", budget,
               "--grace", grace, "--disk-limit", "2g", exp)
    elapsed = time.monotonic() - t0
    res = json.loads(p.stdout)
    rd = Path(res["run_dir"])
    assert json.loads((rd / "result.json").read_text())["status"] == res["status"]
    assert "files:" in (rd / "run.log").read_text(errors="replace")
    # budget + grace, at least 5 s for the merge, and slack for a loaded machine
    assert elapsed < budget + grace + 5 + 5, (elapsed, json.dumps(res)[:3000])
    post = res["resources"]["post_run_s"]
    assert post < 5 + 3, json.dumps(res)[:3000]
    if res["status"] == "infra_error":
        err = res["infra_error"]
        assert "--grace" in res["failure"]["suggestion"], res["failure"]
        assert err["step"] == "disk_merge", json.dumps(res)[:3000]
        assert "end of the budget" in err["message"], err
        img = rd / "exp.img"
        assert img.is_file() and str(img) in err["message"], err
        assert not os.path.ismount(rd / "exp")
    else:
        assert res["status"] == "timeout", json.dumps(res)[:3000]
