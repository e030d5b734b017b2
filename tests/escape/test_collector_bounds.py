"""labbox's own memory and disk stay bounded whatever the experiment writes for it to read:
results files of tens of MB are refused with an issue naming them, long arrays are summarised
in result.json, and labbox itself (outside the run's --memory) never grows with them."""
import json
import os
import subprocess
from pathlib import Path

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT

MiB = 1 << 20

# Written in chunks, so the experiment itself stays small: what grows, if anything, is labbox.
WRITER = r'''
import json
def numbers(path, n):
    with open(path, "w") as f:
        f.write("[")
        chunk = ",".join(["0.12345"] * 100000)
        for i in range(n // 100000):
            f.write(("," if i else "") + chunk)
        f.write("]")
numbers("results.json", 8_000_000)          # ~64 MB: the attack of the red team
numbers("curve.json", 1_000_000)            # ~8 MB: under the per-file cap, but long
with open("final_info.json", "w") as f:
    json.dump({"task": {"means": {"acc": 0.5}, "curve": list(range(5000))}}, f)
print("accuracy: 0.5")
'''


def test_huge_results_files_do_not_grow_labbox(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(WRITER)
    (exp / "labbox.yaml").write_text("results: [curve.json]\n")
    # A first check for this user computes the interpreter's standard-library summaries
    # (hundreds of MiB under AddressSanitizer, once): done here, unmeasured, so the peak
    # below is what the results files cost, whichever test ran first.
    subprocess.run([LABBOX, "check", "--python", PYTHON, str(exp)], capture_output=True,
                   timeout=CALL_TIMEOUT)
    # wait4 gives labbox's own peak resident size (with its descendants': the experiment
    # writes in chunks and stays small).
    pid = os.fork()
    if pid == 0:
        fd = os.open(str(tmp_path / "out.json"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(fd, 1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        os.execv(LABBOX, [LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir",
                          str(tmp_path / "runs"), str(exp)])
    _, status, ru = os.wait4(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    doc = json.loads((tmp_path / "out.json").read_text())
    assert rc == 4 and doc["status"] == "invalid_metrics", (rc, doc.get("status"))
    issues = [i for i in doc["metric_issues"] if i.get("where") == "results.json"]
    assert issues and "larger than the limit" in issues[0]["message"], doc["metric_issues"]
    # the long array of a file that was read is summarised, and the summary is true
    curve = doc["metrics"]["files"]["curve.json"]
    assert curve["labbox_summary"] == "array" and curve["length"] == 1_000_000, curve
    assert curve["min"] == curve["max"] == 0.12345 and len(curve["last"]) == 10
    assert any(w["kind"] == "summarised" and "curve.json" in w["where"]
               for w in doc["metric_warnings"]), doc["metric_warnings"]
    # arrays under the bound are copied whole
    assert doc["metrics"]["files"]["final_info.json"]["task"]["curve"] == list(range(5000))
    rd = Path(doc["run_dir"])
    assert (rd / "result.json").stat().st_size < 4 * MiB
    peak = ru.ru_maxrss * 1024
    assert peak < 400 * MiB, f"labbox (or the writer) peaked at {peak / MiB:.0f} MiB"


def allocated(p: Path) -> int:
    return p.stat().st_blocks * 512


def test_staging_keeps_sparse_files_sparse_and_links_linked(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    with open(exp / "sparse.bin", "wb") as f:
        f.seek(256 * MiB)
        f.write(b"end")
    (exp / "data.bin").write_bytes(os.urandom(4 * MiB))
    for i in range(40):
        os.link(exp / "data.bin", exp / f"link{i}.bin")
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir",
                        str(tmp_path / "runs"), str(exp)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    staged = Path(json.loads(p.stdout)["run_dir"]) / "exp"
    assert (staged / "sparse.bin").stat().st_size == 256 * MiB + 3
    assert allocated(staged / "sparse.bin") < MiB, allocated(staged / "sparse.bin")
    assert (staged / "data.bin").stat().st_nlink == 41
    assert (staged / "link7.bin").read_bytes() == (exp / "data.bin").read_bytes()
    inodes = {f.stat().st_ino: allocated(f) for f in staged.rglob("*") if f.is_file()}
    assert sum(inodes.values()) < 16 * MiB, inodes  # 4 MiB of data and a hole, not 168 MiB
    man = json.loads((staged.parent / "manifest.json").read_text())
    import hashlib
    assert man["files"]["sparse.bin"] == hashlib.sha256(
        (exp / "sparse.bin").read_bytes()).hexdigest()
    assert man["files"]["link3.bin"] == man["files"]["data.bin"]


def test_staging_more_than_the_disk_limit_is_refused(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    (exp / "weights.bin").write_bytes(os.urandom(3 * MiB))
    p = subprocess.run([LABBOX, "run", "--json", "--disk-limit", "1m", "--python", PYTHON,
                        "--runs-dir", str(tmp_path / "runs"), str(exp)], capture_output=True,
                       text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    assert p.returncode == 125 and doc["status"] == "infra_error", doc
    assert "weights.bin" in doc["infra_error"]["message"], doc["infra_error"]
    assert "disk limit" in doc["infra_error"]["message"]
    staged = Path(doc["run_dir"]) / "exp"
    assert sum(f.stat().st_size for f in staged.rglob("*") if f.is_file()) <= MiB


STALLER = r'''
import sys, time
sys.stdout.write("x" * 3_000_000 + "\n")
sys.stdout.flush()
print("accuracy: 1", flush=True)
time.sleep(60)
open("after-the-budget", "w").write("ran on")
'''


def test_a_reader_that_stops_reading_does_not_stretch_the_budget(tmp_path):
    """`labbox run exp | less`, left alone: the experiment fills the pipe, and labbox must still
    end the run at its budget rather than wait in a write for the reader."""
    import time
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(STALLER)
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--budget", "3", "--grace", "1", "--python", PYTHON,
                          "--runs-dir", str(runs), str(exp)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    # nothing reads labbox's output until the run's record says it ended
    doc = None
    for _ in range(600):
        found = list(runs.glob("*/result.json"))
        if found:
            doc = json.loads(found[0].read_text())
            if doc["status"] != "running":
                break
        time.sleep(0.1)
    out, err = p.communicate(timeout=CALL_TIMEOUT)
    assert doc and doc["status"] == "timeout", doc and doc["status"]
    rd = Path(doc["run_dir"])
    assert not (rd / "exp" / "after-the-budget").exists()
    # run.log has everything; the echo says what it did not show
    assert (rd / "run.log").stat().st_size > 3_000_000
    assert b"not shown" in err, err[-500:]
    assert p.returncode == 124
