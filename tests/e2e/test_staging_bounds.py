"""Staging copies the experiment as it is or refuses it, naming why, and costs what the
experiment costs on disk: a file of holes neither stalls it nor grows in a rerun, a stop
signal ends it at once, and a path too long to stage is refused rather than cut."""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from conftest import LABBOX, PYTHON, labbox, write_exp

GOOD = 'print("accuracy: 0.5")\n'


def run_json(*args, cwd=None):
    p = labbox("run", "--json", "--python", PYTHON, *args, cwd=cwd)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout={p.stdout}\nstderr={p.stderr}")


def test_a_file_of_holes_longer_than_the_disk_limit_is_refused_at_once(tmp_path):
    """8 KiB on disk, 4 TiB long: hashing its holes took hours; it can never fit the limit."""
    exp = write_exp(tmp_path, GOOD)
    with open(exp / "weights.bin", "wb") as f:
        f.truncate(4 << 40)
    t0 = time.monotonic()
    p, doc = run_json("--disk-limit", "1g", "--runs-dir", tmp_path / "runs", exp)
    assert time.monotonic() - t0 < 60
    assert p.returncode == 125, (p.returncode, doc.get("status"))
    msg = json.dumps(doc)
    assert "weights.bin" in msg and "past the disk limit" in msg, msg[-2000:]


def test_one_sigterm_during_staging_stops_it_and_keeps_the_record(tmp_path):
    """With no disk limit a long file of holes is staged (hashed as zeros); one SIGTERM, what
    timeout(1) or a pipeline sends, ends that at once as README's 143."""
    exp = write_exp(tmp_path, GOOD)
    with open(exp / "weights.bin", "wb") as f:
        f.truncate(4 << 40)
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--json", "--disk-limit", "0", "--python", PYTHON,
                          "--runs-dir", str(runs), str(exp)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(runs.glob("*/exp/main.py")):
            time.sleep(0.1)
        time.sleep(1)  # well into hashing 4 TiB of holes
        assert p.poll() is None, "staging ended before it was stopped"
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
        assert time.monotonic() - t0 < 5, time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143, (p.returncode, out[-1500:])
    (rd,) = list(runs.iterdir())
    res = json.loads((rd / "result.json").read_text())
    assert res["status"] == "interrupted", res["status"]


def test_a_path_longer_than_path_max_is_refused_naming_it(tmp_path):
    """Cut to 4095 bytes, one file's name was another's: its hard link got the other file's
    bytes and the manifest a key no file had."""
    exp = write_exp(tmp_path, GOOD)
    fd = os.open(exp, os.O_RDONLY)
    for _ in range(16):
        os.mkdir("a" * 250, dir_fd=fd)
        nfd = os.open("a" * 250, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    for name in ("q" * 79, "q" * 79 + "zzzz_long_tail.txt"):
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    p, doc = run_json("--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 125, (p.returncode, doc.get("status"))
    msg = json.dumps(doc)
    assert "longer than 4095 bytes" in msg and "aaaa" in msg and "zzzz_long_tail" in msg, \
        msg[-2000:]


def test_a_rerun_from_the_staged_copy_keeps_holes_and_links(tmp_path):
    """After an edit the rerun rebuilds from the staged copy: a file of holes stays a few
    blocks, and seventeen links to one file stay one file."""
    exp = write_exp(tmp_path, GOOD)
    with open(exp / "holes.bin", "wb") as f:
        f.truncate(512 << 20)
    (exp / "w0.bin").write_bytes(os.urandom(4 << 20))
    for i in range(1, 17):
        os.link(exp / "w0.bin", exp / f"w{i}.bin")
    p, a = run_json("-q", exp, cwd=tmp_path)
    assert p.returncode == 0, a.get("status")
    with open(exp / "main.py", "a") as f:
        f.write("# edited after the run\n")
    q = labbox("rerun", "--json", "-q", a["id"], cwd=tmp_path)
    b = json.loads(q.stdout)
    assert q.returncode == 0, q.stdout[-1500:] + q.stderr[-1500:]
    assert b["rerun"]["source"] == "staged copy", b["rerun"]
    new = Path(b["run_dir"]) / "exp"
    assert (new / "holes.bin").stat().st_size == 512 << 20
    assert (new / "holes.bin").stat().st_blocks * 512 < 1 << 20
    assert (new / "w0.bin").stat().st_nlink == 17
    assert (new / "w16.bin").stat().st_ino == (new / "w0.bin").stat().st_ino


def deep_exp(tmp_path, levels, leaf):
    exp = write_exp(tmp_path, GOOD)
    fd = os.open(exp, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("a" * 250, dir_fd=fd)
        nfd = os.open("a" * 250, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    return exp


def test_a_tree_the_check_cannot_name_is_not_judged_nor_called_missing(tmp_path):
    """Staged (4049 bytes within the experiment), the module's path in the run directory is
    past PATH_MAX for the check: the run was `rejected` (exit 3) as if judged, and `labbox
    check` said the directory that exists was missing."""
    leaf = "x" * 30 + ".py"
    exp = deep_exp(tmp_path, 16, leaf)
    p, doc = run_json("--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 125 and doc["status"] == "infra_error", (p.returncode, doc["status"])
    assert doc["check"]["rejected"] is False, doc["check"]
    assert "aaaa.../aaaa" in doc["check"]["error"], doc["check"]
    assert "longer than 4095 bytes" in doc["check"]["error"], doc["check"]
    deeper = deep_exp(tmp_path / "b", 18, leaf)
    q = labbox("check", deeper)
    assert q.returncode == 2, q.stdout + q.stderr
    assert "No such file" not in q.stderr and "longer than 4095 bytes" in q.stderr, q.stderr
