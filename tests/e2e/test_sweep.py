"""labbox sweep: grids of conditions x seeds, each cell an ordinary run (issue 12 §1).

Real Python experiments, the real binary. Statistics are checked against values computed here
from the cells' own result.json (with a t quantile computed here too), never against numbers
written into the test; concurrency is checked through what the cells saw (each other, their
affinity, their thread variables), never through timings.
"""
import json
import math
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (CALL_TIMEOUT, LABBOX, PYTHON, PtyCapture, host_can_enforce, labbox,
                      wait_for, write_exp)


def sweep(tmp_path, expdir, *opts, args=(), timeout=CALL_TIMEOUT, json_out=True):
    cmd = ["sweep", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"), *map(str, opts)]
    if json_out:
        cmd.insert(1, "--json")
    cmd.append(str(expdir))
    if args:
        cmd += ["--", *map(str, args)]
    return labbox(*cmd, timeout=timeout)


def doc_of(proc):
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"stdout is not one JSON document: rc={proc.returncode}\n"
                             f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")


def result_of(cell):
    return json.loads((Path(cell["run_dir"]) / "result.json").read_text())


# --- Student's t, computed independently of labbox: the pdf integrated by Simpson's rule ---

def _t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def _t_cdf(t, df, steps=4000):
    h = t / steps
    s = _t_pdf(0, df) + _t_pdf(t, df)
    for i in range(1, steps):
        s += (4 if i % 2 else 2) * _t_pdf(i * h, df)
    return 0.5 + s * h / 3


def t975(df):
    lo, hi = 0.0, 64.0
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2
        if _t_cdf(mid, df) < 0.975:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


GRID_MAIN = """
import argparse, random
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, required=True)
p.add_argument("--model", required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
random.seed(a.seed * 1000 + sum(map(ord, a.model)))
print("TIME_ESTIMATE: 1s")
print(f"accuracy: {0.5 + a.lr + random.random() / 10:.6f}")
print(f"loss: {1.0 / (1 + a.lr) + random.random():.6f}")
print(f"lr_seen: {a.lr}")
print(f"model_seen: {a.model}")
print(f"seed_seen: {a.seed}")
"""


def test_grid_statistics_from_the_cells_own_results(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1,0.01", "--param", "model=mlp,cnn,rnn",
              "--seeds", "0-2", "--jobs", "2")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["schema"] == "labbox.sweep/1" and d["status"] == "completed"
    assert d["plan"]["conditions"] == 6 and d["plan"]["cells"] == 18
    assert d["counts"]["completed"] == 18
    assert len(d["conditions"]) == 6
    by_name = {c["name"]: c for c in d["conditions"]}
    for cond in d["conditions"]:
        cells = [c for c in d["cells"] if c["condition"] == cond["name"]]
        assert len(cells) == 3 and sorted(c["seed"] for c in cells) == [0, 1, 2]
        for metric in ("accuracy", "loss"):
            vals = [result_of(c)["metrics"]["values"][metric] for c in cells]
            n = len(vals)
            mean = statistics.fmean(vals)
            sd = statistics.stdev(vals)
            half = t975(n - 1) * sd / math.sqrt(n)
            b = cond["metrics"][metric]
            assert b["n"] == n
            assert b["mean"] == pytest.approx(mean, rel=1e-9, abs=1e-12)
            assert b["std"] == pytest.approx(sd, rel=1e-9, abs=1e-12)
            assert b["ci95"]["low"] == pytest.approx(mean - half, rel=1e-6, abs=1e-9)
            assert b["ci95"]["high"] == pytest.approx(mean + half, rel=1e-6, abs=1e-9)
            assert b["min"] == min(vals) and b["max"] == max(vals)
    # The parameters reached the experiment as --NAME VALUE and the seed as --seed S.
    for c in d["cells"]:
        r = result_of(c)
        vals = r["metrics"]["values"]
        assert vals["lr_seen"] == float(c["params"]["lr"])
        assert vals["model_seen"] == c["params"]["model"]
        assert vals["seed_seen"] == c["seed"]
        assert r["sweep"]["id"] == d["id"] and r["sweep"]["cell"] == c["cell"]
        assert r["status"] == "completed"
    assert "lr=0.1,model=cnn" in by_name
    # Different models give different numbers: nothing is flagged identical.
    assert d["identical_conditions"] == []
    # sweep.json beside the runs says the same.
    on_disk = json.loads((Path(d["sweep_dir"]) / "sweep.json").read_text())
    assert on_disk["id"] == d["id"] and on_disk["conditions"] == d["conditions"]
    assert Path(d["sweep_dir"]).parent == tmp_path / "sweeps"
    # The index tags every cell with the sweep and its parameters.
    lst = labbox("runs", "list", "--json", "--runs-dir", tmp_path / "runs", "--sweep", d["id"][:8])
    assert lst.returncode == 0, lst.stderr
    rows = json.loads(lst.stdout)["runs"]
    assert len(rows) == 18
    assert {(r["sweep"]["condition"], r["sweep"]["seed"]) for r in rows} == \
        {(c["condition"], c["seed"]) for c in d["cells"]}
    assert all(r["sweep"]["params"]["lr"] in ("0.1", "0.01") for r in rows)
    other = labbox("runs", "list", "--json", "--runs-dir", tmp_path / "runs", "--sweep", "ffff0000")
    # an id that is no sweep is named, not an empty list (as report and --resume do)
    assert other.returncode == 2 and "no sweep 'ffff0000'" in other.stderr, other.stderr


def test_yaml_grid_with_a_template_and_environment(tmp_path):
    exp = write_exp(tmp_path, """
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--learning-rate", type=float, required=True)
        p.add_argument("--s", type=int, required=True)
        p.add_argument("--fixed", required=True)
        a = p.parse_args()
        print(f"lr_seen: {a.learning_rate}")
        print(f"seed_seen: {a.s}")
        print(f"tag_seen: {os.environ['RUN_TAG']}")
        print(f"fixed_seen: {a.fixed}")
        """, yaml="""
        args: [--fixed, yes]
        sweep:
          parameters:
            lr: [0.5, 0.25]
          seeds: [3, 7]
          args: "--learning-rate {lr} --s {seed}"
          env:
            RUN_TAG: "t-{seed}"
        """)
    p = sweep(tmp_path, exp)
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["plan"]["seeds"] == [3, 7] and d["plan"]["cells"] == 4
    for c in d["cells"]:
        v = result_of(c)["metrics"]["values"]
        assert v["lr_seen"] == float(c["params"]["lr"])
        assert v["seed_seen"] == c["seed"]
        assert v["tag_seen"] == f"t-{c['seed']}"
        assert v["fixed_seen"] == "yes"


CONCURRENT_MAIN = """
import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--x", required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
mask = sum(1 << c for c in os.sched_getaffinity(0))
with open(f"/shared/cell-{a.seed}", "w") as f:
    f.write(str(mask))
peer = None
for _ in range(1200):  # a peer that never comes fails the test, not the sweep
    others = [n for n in os.listdir("/shared") if n != f"cell-{a.seed}"]
    if others:
        peer = open(os.path.join("/shared", sorted(others)[0])).read().strip()
        if peer:
            break
    time.sleep(0.05)
print(f"own_mask: {mask}")
print(f"peer_mask: {peer if peer else -1}")
print(f"cpus_seen: {len(os.sched_getaffinity(0))}")
for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    print(f"{v.lower()}: {os.environ.get(v, -1)}")
"""


def test_two_jobs_run_at_once_on_disjoint_cpus(tmp_path):
    ncpu = len(os.sched_getaffinity(0))
    if ncpu < 2:
        pytest.fail("this test needs a machine with at least 2 CPUs")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    exp = write_exp(tmp_path, CONCURRENT_MAIN)
    p = sweep(tmp_path, exp, "--param", "x=a", "--seeds", "0-3", "--jobs", "2",
              "--policy", "permissive", "-v", f"{shared}:/shared:rw")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    share = ncpu // 2
    cells = {c["seed"]: result_of(c)["metrics"]["values"] for c in d["cells"]}
    for s, v in cells.items():
        # Each cell got its share of the CPUs, and thread pools sized to it.
        assert v["cpus_seen"] == share, v
        assert bin(int(v["own_mask"])).count("1") == share
        for var in ("omp_num_threads", "mkl_num_threads", "openblas_num_threads",
                    "numexpr_num_threads"):
            assert v[var] == share, (var, v)
    # The first two cells ran at the same time: each saw the other's file, and their CPUs
    # do not overlap.
    assert cells[0]["peer_mask"] == cells[1]["own_mask"]
    assert cells[1]["peer_mask"] == cells[0]["own_mask"]
    assert int(cells[0]["own_mask"]) & int(cells[1]["own_mask"]) == 0
    slots = {c["seed"]: c["slot"] for c in d["cells"]}
    assert slots[0]["index"] != slots[1]["index"]


def test_a_cell_cannot_leave_its_cpus_or_the_record_says_it_may(tmp_path):
    """A cell that sets its affinity to every CPU: where labbox can make a cpuset cgroup
    (root, or a delegated cpuset controller) the cell stays on its slot's CPUs and the slot's
    enforced_by names the cpuset; elsewhere the widening holds and enforced_by says the share
    was only the affinity, in sweep.json and in the cell's manifest alike."""
    ncpu = len(os.sched_getaffinity(0))
    if ncpu < 2:
        pytest.fail("this test needs a machine with at least 2 CPUs")
    exp = write_exp(tmp_path, """
import os
slot = len(os.sched_getaffinity(0))
try:
    os.sched_setaffinity(0, set(range(os.cpu_count())))
except OSError:
    pass
print(f"slot_cpus: {slot}")
print(f"affinity_after: {len(os.sched_getaffinity(0))}")
""")
    p = sweep(tmp_path, exp, "--seeds", "0-1", "--jobs", "2")
    assert p.returncode == 0, p.stderr
    d = doc_of(p)
    fenced = host_can_enforce("cpuset")
    for c in d["cells"]:
        v = result_of(c)["metrics"]["values"]
        assert v["slot_cpus"] == ncpu // 2, v
        if fenced:
            assert v["affinity_after"] == ncpu // 2, v
            assert c["slot"]["enforced_by"].startswith("cgroup v"), c["slot"]
            assert "cpuset" in c["slot"]["enforced_by"], c["slot"]
        else:
            assert v["affinity_after"] == ncpu, v
            assert c["slot"]["enforced_by"] == "affinity (the experiment may change it)", c["slot"]
        manifest = json.loads((Path(c["run_dir"]) / "manifest.json").read_text())
        assert manifest["sweep"]["slot"]["enforced_by"] == c["slot"]["enforced_by"]


def test_more_jobs_than_cpus_is_refused(tmp_path):
    ncpu = len(os.sched_getaffinity(0))
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1",
              "--jobs", str(ncpu + 1))
    assert p.returncode == 2, p.stderr
    d = doc_of(p)
    assert d["schema"] == "labbox.error/1" and "CPUs" in d["error"]["message"]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1",
              "--jobs", "2", "--cpus", str(ncpu))
    assert p.returncode == 2 and "oversubscribe" in doc_of(p)["error"]["message"]


BLOCKING_MAIN = """
import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--x", required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
open(f"/ctl/ready-{a.seed}", "w").close()
while not os.path.exists("/ctl/go"):
    time.sleep(0.05)
print(f"value: {a.seed * 2}")
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_running_cells_as_interrupted_and_resume_finishes(tmp_path, sig):
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, BLOCKING_MAIN)
    cmd = [LABBOX, "sweep", "--json", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"),
           "--param", "x=a", "--seeds", "0-3", "--jobs", "2", "--policy", "permissive",
           "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (ctl / "ready-0").exists() and (ctl / "ready-1").exists(),
                        120), "the first two cells never started"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=CALL_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    d = json.loads(out)
    assert d["status"] == "interrupted"
    st = {c["seed"]: c for c in d["cells"]}
    assert st[0]["status"] == st[1]["status"] == "interrupted"
    assert st[2]["status"] == st[3]["status"] == "not_run"
    for s in (0, 1):
        r = result_of(st[s])  # the interrupted runs keep their records
        assert r["status"] == "interrupted" and r["sweep"]["seed"] == s
    assert {f["class"] for f in d["failures"]} == {"interrupted"}
    on_disk = json.loads((Path(d["sweep_dir"]) / "sweep.json").read_text())
    assert on_disk["status"] == "interrupted"
    (ctl / "go").touch()
    p = labbox("sweep", "--json", "--resume", d["id"][:10], "--runs-dir", tmp_path / "runs")
    d2 = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d2["id"] == d["id"] and d2["status"] == "completed"
    assert d2["counts"]["completed"] == 4 and d2["counts"]["reused"] == 0
    for c in d2["cells"]:
        assert result_of(c)["metrics"]["values"]["value"] == c["seed"] * 2
        assert c["run_id"] not in (st[0]["run_id"], st[1]["run_id"])


def _labbox_processes_below(pid):
    """Every process whose ancestry reaches pid (by /proc's ppid links)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parent[int(d)] = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    out = []
    for p in parent:
        q = p
        while q in parent and q > 1:
            q = parent[q]
            if q == pid:
                out.append(p)
                break
    return out


def test_a_sweep_killed_outright_leaves_no_cell_running_and_each_says_interrupted(tmp_path):
    """SIGKILL gives the sweep's process no say: what forks its cells ends with it, and the
    running cells end as interrupted runs with their records; nothing of the sweep goes on."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, BLOCKING_MAIN)
    cmd = [LABBOX, "sweep", "--json", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"),
           "--param", "x=a", "--seeds", "0-3", "--jobs", "2", "--policy", "permissive",
           "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (ctl / "ready-0").exists() and (ctl / "ready-1").exists(),
                        120), "the first two cells never started"
        below = _labbox_processes_below(proc.pid)
        assert below, "the sweep has no processes below it"
        proc.kill()
        proc.wait()
        assert wait_for(lambda: not [p for p in below if Path(f"/proc/{p}").exists()], 60), \
            "processes of the killed sweep are still running"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2, runs  # the two running cells; the others never started
    for r in runs:
        d = json.loads((r / "result.json").read_text())
        assert d["status"] == "interrupted", d["status"]
        assert d["sweep"]["seed"] in (0, 1)
    assert not (ctl / "ready-2").exists() and not (ctl / "ready-3").exists()


def test_sweep_json_shows_a_finished_cell_while_another_still_runs(tmp_path):
    """sweep.json is written at most once a second while cells run: a cell that ended within a
    second of the last write is written at the next tick, not when the next cell ends (which
    may be hours later)."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, """
        import argparse, os, time
        p = argparse.ArgumentParser()
        p.add_argument("--x", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        if a.seed == 1:
            open("/ctl/ready-1", "w").close()
            while not os.path.exists("/ctl/go"):
                time.sleep(0.05)
        print(f"value: {a.seed}")
        """)
    cmd = [LABBOX, "sweep", "--json", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"),
           "--param", "x=a", "--seeds", "0-1", "--jobs", "2", "--policy", "permissive",
           "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def cell0_written():
        for doc in (tmp_path / "sweeps").glob("*/sweep.json"):
            try:
                d = json.loads(doc.read_text())
            except ValueError:
                continue
            if d["status"] == "running" and d["cells"][0]["status"] == "completed":
                return d
        return None
    try:
        assert wait_for(lambda: (ctl / "ready-1").exists(), 120), "cell 1 never started"
        assert wait_for(cell0_written, 60), "sweep.json never showed cell 0 completed"
        d = cell0_written()
        assert d["cells"][1]["status"] != "completed"
        (ctl / "go").touch()
        out, err = proc.communicate(timeout=CALL_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert json.loads(out)["counts"]["completed"] == 2


def test_another_runs_directory_beside_reuses_none_of_the_first(tmp_path):
    """Two runs directories side by side share the sweeps kept beside them; a sweep asked to
    keep its runs in the second runs its cells there, and reports none of the first's."""
    exp = write_exp(tmp_path, GRID_MAIN)
    opts = ("--param", "lr=0.1", "--param", "model=mlp", "--seeds", "0,1")
    d1 = doc_of(labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs1",
                       *opts, exp))
    assert d1["counts"]["completed"] == 2
    p2 = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs2", *opts, exp)
    d2 = doc_of(p2)
    assert p2.returncode == 0, p2.stderr
    assert d2["counts"]["reused"] == 0 and d2["counts"]["completed"] == 2
    assert all(Path(c["run_dir"]).parent == tmp_path / "runs2" for c in d2["cells"]), d2["cells"]
    assert len(os.listdir(tmp_path / "runs2")) == 2
    # The same command again reuses its own.
    d3 = doc_of(labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs2",
                       *opts, exp))
    assert d3["counts"]["reused"] == 2


def test_the_same_command_twice_does_not_rerun(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    opts = ("--param", "lr=0.1,0.2", "--param", "model=mlp", "--seeds", "0,5")
    p1 = sweep(tmp_path, exp, *opts)
    d1 = doc_of(p1)
    assert p1.returncode == 0, p1.stderr
    runs_before = sorted(os.listdir(tmp_path / "runs"))
    p2 = sweep(tmp_path, exp, *opts)
    d2 = doc_of(p2)
    assert p2.returncode == 0, p2.stderr
    assert d2["id"] == d1["id"]
    assert d2["counts"]["reused"] == 4
    assert [c["run_id"] for c in d2["cells"]] == [c["run_id"] for c in d1["cells"]]
    assert sorted(os.listdir(tmp_path / "runs")) == runs_before
    assert d2["conditions"] == d1["conditions"]
    # Another grid, or changed code, is another sweep.
    p3 = sweep(tmp_path, exp, "--param", "lr=0.1,0.3", "--param", "model=mlp", "--seeds", "0,5")
    assert doc_of(p3)["id"] != d1["id"]
    (exp / "main.py").write_text((exp / "main.py").read_text() + "\n# changed\n")
    p4 = sweep(tmp_path, exp, *opts)
    d4 = doc_of(p4)
    assert d4["id"] != d1["id"] and d4["counts"]["reused"] == 0
    # Resuming the old sweep now refuses: its finished cells are of other code.
    p5 = labbox("sweep", "--json", "--resume", d1["id"], "--runs-dir", tmp_path / "runs")
    assert p5.returncode == 2 and "changed" in doc_of(p5)["error"]["message"]


def test_identical_conditions_are_flagged(tmp_path):
    exp = write_exp(tmp_path, """
        import argparse, random
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, required=True)
        p.add_argument("--optimizer", required=True)   # parsed, never used: the bug
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        random.seed(a.seed)
        print(f"accuracy: {a.lr + random.random():.6f}")
        print(f"fit_seconds: {random.random() + a.seed}")
        """)
    p = sweep(tmp_path, exp, "--param", "lr=0.1,0.2", "--param", "optimizer=adam,sgd",
              "--seeds", "0-1")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    groups = sorted(sorted(g["conditions"]) for g in d["identical_conditions"])
    assert groups == [["lr=0.1,optimizer=adam", "lr=0.1,optimizer=sgd"],
                      ["lr=0.2,optimizer=adam", "lr=0.2,optimizer=sgd"]]
    for g in d["identical_conditions"]:
        assert g["metrics"] == ["accuracy"]


def test_a_failing_cell_is_listed_with_its_class(tmp_path):
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--mode", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        if a.mode == "crash" and a.seed == 1:
            x = 1 / 0
        print(f"score: {a.seed + (0.5 if a.mode == 'ok' else 0.25)}")
        """)
    p = sweep(tmp_path, exp, "--param", "mode=ok,crash", "--seeds", "0-2")
    d = doc_of(p)
    assert p.returncode == 1, p.stderr
    assert d["status"] == "failed"
    assert d["counts"] == {"cells": 6, "completed": 5, "failed": 1, "interrupted": 0,
                           "not_run": 0, "reused": 0, "retried": 0}
    [f] = d["failures"]
    assert f["condition"] == "mode=crash" and f["seed"] == 1
    assert f["status"] == "failed" and f["class"] == "code_error"
    assert "ZeroDivisionError" in (f["summary"] or "") or f["run_id"]
    crash = next(c for c in d["conditions"] if c["name"] == "mode=crash")
    # Statistics are over the completed cells only.
    assert crash["completed"] == 2 and crash["metrics"]["score"]["n"] == 2
    vals = [result_of(c)["metrics"]["values"]["score"] for c in d["cells"]
            if c["condition"] == "mode=crash" and c["status"] == "completed"]
    assert crash["metrics"]["score"]["mean"] == pytest.approx(statistics.fmean(vals))


def test_the_budget_table_refuses_a_plan_outside_it(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1,0.2,0.3", "--param", "model=a",
              "--seeds", "0-1", "--sweep-budget", "100")
    assert p.returncode == 2
    d = doc_of(p)
    msg = d["error"]["message"]
    assert d["schema"] == "labbox.error/1"
    assert "3 conditions" in msg and "| < 120s | 1-2 | 1-2 |" in msg
    assert not (tmp_path / "runs").exists()
    # Iterations come from labbox.yaml; a per-cell budget checks them alone.
    exp2 = write_exp(tmp_path, GRID_MAIN, name="exp2", yaml="""
        sweep:
          iterations: 8000
        """)
    p = sweep(tmp_path, exp2, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0",
              "--budget", "200", json_out=False)
    assert p.returncode == 2
    assert "8000 iterations" in p.stderr and "| 120-300s | 2-5 | 3-5 |" in p.stderr
    # Inside the table, or with the override, it runs.
    p = sweep(tmp_path, exp, "--param", "lr=0.1,0.2,0.3", "--param", "model=a",
              "--seeds", "0-1", "--sweep-budget", "100", "--ignore-budget-table")
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("opts,yaml,words", [
    (["--param", "lr="], None, "no values"),
    (["--param", "lr=0.1,,0.2"], None, "empty value"),
    (["--param", "lr=0.1,0.1"], None, "twice"),
    (["--param", "lr=0.1", "--param", "lr=0.2"], None, "given twice"),
    (["--param", "=1"], None, "NAME=V1"),
    (["--param", "1x=1"], None, "not a name"),
    (["--param", "seed=1"], None, "'seed' cannot be a parameter"),
    (["--seeds", "4-1"], None, "backwards"),
    (["--seeds", "a"], None, "not a non-negative integer"),
    (["--seeds", "1,1"], None, "twice"),
    (["--seeds", ""], None, "empty"),
    (["--seeds", "0-"], None, "range needs an end"),
    (["--seeds", "0,"], None, "comma"),
    ([], None, "grid is empty"),
    (["--param", "lr=1", "--args", "--lr {lrr}"], None, "{lrr}"),
    (["--param", "lr=1", "--param", "b=2", "--args", "--lr {lr}"], None, "never reaches"),
    (["--param", "lr=1", "--args", "--lr {lr} {seed}"], None, "no seeds"),
    ([], "sweep:\n  parameters:\n    lr: []\n", "no values"),
    ([], "sweep:\n  parameters:\n    lr: [1]\n    lr: [2]\n", "given twice"),
    ([], "sweep:\n  parameters: [lr]\n", "mapping"),
    ([], "sweep:\n  seeds: 3-1\n", "backwards"),
    ([], "sweep:\n  sedes: 0-1\n", "unknown key 'sedes'"),
])
def test_bad_grids_are_usage_errors(tmp_path, opts, yaml, words):
    exp = write_exp(tmp_path, GRID_MAIN, yaml=yaml)
    p = sweep(tmp_path, exp, *opts)
    assert p.returncode == 2, (p.stdout, p.stderr)
    d = doc_of(p)
    assert d["schema"] == "labbox.error/1" and d["exit_code"] == 2
    assert words in d["error"]["message"], d["error"]["message"]
    assert not (tmp_path / "runs").exists()
    # Without --json the same message is one line on stderr, and stdout is empty.
    p = sweep(tmp_path, exp, *opts, json_out=False)
    assert p.returncode == 2 and p.stdout == ""
    assert words in p.stderr


def test_progress_is_on_stderr_and_json_alone_on_stdout(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1")
    assert p.returncode == 0
    doc_of(p)  # stdout parses as exactly one document
    assert "cell 0" in p.stderr and "completed" in p.stderr
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1",
              json_out=False)
    assert p.returncode == 0
    assert "lr=0.1,model=a (2/2)" in p.stdout and "sweep.json" in p.stdout


def test_the_sweep_budget_ends_running_cells_and_resume_finishes(tmp_path):
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, BLOCKING_MAIN)
    opts = ("--param", "x=a", "--seeds", "0-1", "--jobs", "2", "--policy", "permissive",
            "-v", f"{ctl}:/ctl:rw")
    p = sweep(tmp_path, exp, *opts, "--sweep-budget", "3")
    d = doc_of(p)
    assert p.returncode == 124, p.stderr
    assert d["status"] == "timeout"
    assert [c["status"] for c in d["cells"]] == ["interrupted", "interrupted"]
    assert all(result_of(c)["status"] == "interrupted" for c in d["cells"])
    (ctl / "go").touch()
    p = labbox("sweep", "--json", "--resume", d["id"], "--runs-dir", tmp_path / "runs")
    d2 = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d2["counts"]["completed"] == 2


def test_resume_of_a_finished_sweep_keeps_values_with_commas(tmp_path):
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--tag", required=True)
        a = p.parse_args()
        print(f"n_parts: {len(a.tag.split(','))}")
        """, yaml="""
        sweep:
          parameters:
            tag: ["a,b", c]
        """)
    p = sweep(tmp_path, exp)
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert [c["metrics"]["n_parts"] for c in d["cells"]] == [2, 1]
    p = labbox("sweep", "--json", "--resume", d["id"], "--runs-dir", tmp_path / "runs")
    d2 = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d2["id"] == d["id"] and d2["counts"]["reused"] == 2


def test_a_terminal_gets_a_live_progress_line(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    with PtyCapture() as term:
        proc = subprocess.run([LABBOX, "sweep", "--python", PYTHON, "--runs-dir",
                               str(tmp_path / "runs"), "--param", "lr=0.1,0.2", "--param",
                               "model=a", "--seeds", "0-1", str(exp)],
                              stdout=subprocess.PIPE, stderr=term.slave, text=True,
                              timeout=CALL_TIMEOUT)
    tty = term.text()
    assert proc.returncode == 0, tty
    assert "\r\x1b[K" in tty
    assert "4/4 done, 0 running, 0 failed" in tty
    assert "time left" in tty
    assert "lr=0.2,model=a (2/2)" in proc.stdout


def test_cells_run_one_by_one_as_array_tasks_are_counted_by_resume(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1,0.2", "--param", "model=a", "--seeds", "0-1",
              "--plan-only")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["status"] == "planned" and d["counts"]["not_run"] == 4
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    runs = tmp_path / "runs"
    for n in (1, 2):
        c = labbox("sweep", "--json", "--resume", d["id"], "--cell", n, "--runs-dir", runs)
        assert c.returncode == 0, c.stderr
        r = json.loads(c.stdout)
        assert r["schema"] == "labbox.run/1" and r["sweep"]["cell"] == n
        assert r["metrics"]["values"]["seed_seen"] == d["cells"][n]["seed"]
    bad = labbox("sweep", "--json", "--resume", d["id"], "--cell", 9, "--runs-dir", runs)
    assert bad.returncode == 2 and "cells 0 to 3" in json.loads(bad.stdout)["error"]["message"]
    p = labbox("sweep", "--json", "--resume", d["id"], "--runs-dir", runs)
    d2 = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d2["counts"]["completed"] == 4 and d2["counts"]["reused"] == 2
    assert [c["reused"] for c in d2["cells"]] == [False, True, True, False]


def test_run_flags_apply_to_every_cell(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1",
              "--metrics", "accuracy,not_reported", "--memory", "256m", "-e", "EXTRA=1",
              # an ordinary user on a host without a delegated memory cgroup accepts the
              # per-process limit; for root it changes nothing
              "--allow-degraded", "memory")
    d = doc_of(p)
    assert p.returncode == 1, p.stderr
    assert [c["status"] for c in d["cells"]] == ["invalid_metrics", "invalid_metrics"]
    assert {f["status"] for f in d["failures"]} == {"invalid_metrics"}
    for c in d["cells"]:
        m = json.loads((Path(c["run_dir"]) / "manifest.json").read_text())
        assert m["config"]["metrics"] == ["accuracy", "not_reported"]
        assert m["config"]["sandbox"]["memory_bytes"] == 256 << 20
        assert "EXTRA=1" in m["config"]["sandbox"]["env"]
        assert m["sweep"]["id"] == d["id"]


def test_records_inside_the_experiment_do_not_change_its_id(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    runs = exp / "records" / "runs"  # the index and the sweeps land in exp/records too
    cmd = ("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--param", "lr=0.1",
           "--param", "model=a", "--seeds", "0-1", exp)
    d1 = doc_of(labbox(*cmd))
    assert d1["status"] == "completed"
    assert (exp / "records" / "labbox.db").exists() and (exp / "records" / "sweeps").is_dir()
    d2 = doc_of(labbox(*cmd))
    assert d2["id"] == d1["id"] and d2["counts"]["reused"] == 2


def test_bad_sandbox_flags_are_refused_once_before_any_cell(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    p = sweep(tmp_path, exp, "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-3",
              "-v", f"{tmp_path}/missing:/data")
    assert p.returncode == 2
    assert "missing" in doc_of(p)["error"]["message"]
    assert not (tmp_path / "runs").exists()


# --- mode slurm without a cluster: what is decided here (tests/e2e/test_sweep_slurm.py runs
# the array on a real one) ---

def test_plan_only_in_mode_slurm_shows_the_batch_script_and_submits_nothing(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    opts = ("--mode", "slurm", "--plan-only", "--param", "lr=0.1,0.2", "--param", "model=a",
            "--seeds", "0-2", "--jobs", "2", "--budget", "60", "--partition", "gpu-a")
    p = sweep(tmp_path, exp, *opts, json_out=False)
    assert p.returncode == 0, p.stderr
    assert "would be submitted as one Slurm array" in p.stdout
    assert "--array=0-5%2" in p.stdout and "--partition=gpu-a" in p.stdout
    assert "--signal=B:TERM@60" in p.stdout and "--time=4" in p.stdout  # 60 + 5 + 120 s
    d = doc_of(sweep(tmp_path, exp, *opts))
    assert d["status"] == "planned" and d["executor"] == "slurm"
    sl = d["slurm"]
    assert sl["job_id"] is None and sl["array"] == "0-5%2" and sl["partition"] == "gpu-a"
    script = Path(sl["script"]).read_text()
    assert script == sl["script_text"] and script.startswith("#!/bin/sh")
    # One case per cell, each the cell's own labbox run on the node, its output beside it.
    for n in range(6):
        assert f"'--resume' '{d['id']}' '--cell' '{n}'" in script
        assert f"/slurm/cell-{n}/node.json'" in script
    assert [t["cell"] for t in sl["tasks"]] == list(range(6))
    assert {t["state"] for t in sl["tasks"]} == {"PLANNED"}
    assert not any((tmp_path / "runs").iterdir())  # nothing ran


def test_mode_slurm_without_a_cluster_is_125_and_runs_nothing_here(tmp_path):
    exp = write_exp(tmp_path, GRID_MAIN)
    grid = ("--mode", "slurm", "--param", "lr=0.1", "--param", "model=a", "--seeds", "0-1")
    # No Slurm client on PATH at all.
    bare = tmp_path / "bin"
    bare.mkdir()
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", *grid,
               exp, env=dict(os.environ, PATH=str(bare)))
    assert p.returncode == 125, p.stderr
    msg = doc_of(p)["error"]["message"]
    assert "sbatch" in msg and "not installed" in msg, msg
    # A configuration that cannot be read.
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", *grid,
               exp, env=dict(os.environ, SLURM_CONF=str(tmp_path / "missing.conf")))
    if "no '" not in p.stdout:  # the clients are installed here
        assert p.returncode == 125, p.stderr
        assert "missing.conf" in doc_of(p)["error"]["message"]
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    # Never a silent fallback: the mode is refused with --image too.
    p = sweep(tmp_path, exp, *grid, "--image", "x")
    assert p.returncode == 2 and "mode docker" in doc_of(p)["error"]["message"]


def test_the_index_is_whole_and_its_wal_empty_after_a_sweep(tmp_path):
    """One connection is held for the whole sweep (the cells' own neither rebuild the WAL's
    index nor checkpoint at every end): every cell is in the index afterwards, the WAL is
    checkpointed into the database and emptied, and nothing of the sweep stays running."""
    exp = write_exp(tmp_path, GRID_MAIN)
    runs = tmp_path / "runs"
    p = sweep(tmp_path, exp, "--jobs", "2", "--param", "lr=0.1,0.2", "--param", "model=mlp,cnn",
              "--seeds", "0-2")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert len(d["cells"]) == 12
    # Nothing of this sweep's labbox is left: its keeper went with it.
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(runs).encode() in cmd:
            left.append(pid)
    assert left == []
    wal = tmp_path / "labbox.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    q = labbox("runs", "list", "--json", "--sweep", d["id"], "--runs-dir", runs)
    assert q.returncode == 0, q.stderr
    listed = {r["id"] for r in json.loads(q.stdout)["runs"]}
    assert listed == {c["run_id"] for c in d["cells"]}
    # The same from SQLite's side, with the WAL gone: the rows are in the database file.
    import sqlite3
    db = sqlite3.connect(f"file:{tmp_path / 'labbox.db'}?mode=ro", uri=True)
    n = db.execute("SELECT count(*) FROM runs").fetchone()[0]
    db.close()
    assert n == 12


def test_the_runtime_gate_is_asked_for_every_cell_and_kept_on_resume(tmp_path):
    """--runtime-gate is a run's setting like --policy: every cell runs under it, sweep.json
    keeps it, and --resume runs the cells that did not finish under it again (the gate's
    refusal of a cell's import of pty under `on`, the import recorded under `record`)."""
    exp = write_exp(tmp_path, """
        import argparse, os
        p = argparse.ArgumentParser()
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        if a.seed == 1 and not os.path.exists("/tmp/go"):
            raise SystemExit("seed 1 waits for the resume")
        import pty
        print(f"score: {a.seed}")
        """)
    p = sweep(tmp_path, exp, "--policy", "permissive", "--runtime-gate", "record",
              "--seeds", "0,1", "-e", "X=1")
    d = doc_of(p)
    assert p.returncode == 1, p.stderr
    assert d["invocation"]["runtime_gate"] == "record"
    done = [c for c in d["cells"] if c["status"] == "completed"]
    assert len(done) == 1
    g = result_of(done[0])["runtime_gate"]
    assert g["mode"] == "record" and any(e["event"] == "import" for e in g["events"]), g
    # the resume: seed 1 again, under the same gate (its /tmp is private: it always fails
    # here, which is what shows the mode it ran with)
    p = labbox("sweep", "--json", "--resume", d["id"], "--retry-failed",
               "--runs-dir", str(tmp_path / "runs"))
    d2 = doc_of(p)
    cell = next(c for c in d2["cells"] if c["seed"] == 1)
    assert result_of(cell)["runtime_gate"]["mode"] == "record", result_of(cell)["runtime_gate"]
    # and under `on` the import is refused in every cell
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs2"),
               "--policy", "permissive", "--runtime-gate", "on", "--seeds", "0", str(exp))
    d3 = doc_of(p)
    [f] = d3["failures"]
    assert f["class"] == "gate_refused", f


def test_env_chooses_the_interpreter_of_every_cell_and_of_the_resume(tmp_path):
    """`--env NAME|PATH|auto` (spelt long, with no '=') chooses the Python environment of
    every cell as for labbox run; sweep.json keeps it for --resume, and a sweep with another
    environment is another sweep (its cells are not the first one's)."""
    import glob
    others = sorted(glob.glob("/root/.pyenv/versions/3.1[0-9]*/bin/python3"))
    if not others:
        pytest.skip("no second interpreter (pyenv) on this machine")
    other = others[-1]
    exp = write_exp(tmp_path, """
        import argparse, sys
        p = argparse.ArgumentParser()
        p.add_argument("--seed", type=int, required=True)
        p.parse_args()
        print("minor:", sys.version_info[1])
        """)
    runs = str(tmp_path / "runs")
    p = labbox("sweep", "--json", "--env", other, "--runs-dir", runs, "--seeds", "0", str(exp))
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["invocation"]["env_asked"] == other
    want = int(subprocess.run([other, "-c", "import sys; print(sys.version_info[1])"],
                              capture_output=True, text=True, check=True).stdout)
    assert result_of(d["cells"][0])["metrics"]["values"]["minor"] == want
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0",
               str(exp))
    d2 = doc_of(p)
    assert d2["id"] != d["id"] and d2["counts"]["reused"] == 0, d2["counts"]
    # -e keeps setting a variable
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0",
               "-e", "auto", str(exp))
    assert p.returncode == 2 and "NAME=VALUE" in p.stderr, p.stderr


def test_values_holding_separators_give_conditions_a_report_keeps_apart(tmp_path):
    """a: ["1,b=2", "1"] and b: ["3", "2,b=3"] are four conditions, two of which used to share
    the name a=1,b=2,b=3: the report then refused labbox's own sweep.json ("appears twice") and
    pooled the two given as runs. Values at the double maximum (1.7e308 twice and -1.7e308)
    have a finite mean in sweep.json and in the report, not null or inf."""
    import csv
    import io
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--a"); p.add_argument("--b"); p.add_argument("--seed", type=int)
        a = p.parse_args()
        print("big:", "1.7e308" if a.seed < 2 else "-1.7e308")
        print("acc:", 0.5)
        """, yaml="""
        sweep:
          parameters:
            a: ["1,b=2", "1"]
            b: ["3", "2,b=3"]
          seeds: 0-2
        """)
    p = sweep(tmp_path, exp)
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    names = [c["name"] for c in d["conditions"]]
    assert len(set(names)) == 4, names
    assert 'a="1,b=2",b=3' in names and 'a=1,b="2,b=3"' in names
    for c in d["conditions"]:
        assert c["metrics"]["big"]["mean"] == pytest.approx(1.7e308 / 3, rel=1e-12), c
    runs = tmp_path / "runs"
    ids = [c["run_id"] for c in d["cells"]]
    for what in ([d["id"]], ids):
        p = labbox("report", "--runs-dir", runs, "--format", "csv", *what)
        assert p.returncode == 0, p.stderr
        rows = list(csv.DictReader(io.StringIO(p.stdout)))
        acc = {r["condition"]: int(r["n"]) for r in rows if r["metric"] == "acc"}
        assert acc == {n: 3 for n in names}, (what, p.stdout)
        for r in rows:
            if r["metric"] == "big":
                assert float(r["mean"]) == pytest.approx(1.7e308 / 3, rel=1e-12), r
        p = labbox("report", "--runs-dir", runs, "--format", "md", *what)
        assert p.returncode == 0 and "nan" not in p.stdout.lower(), p.stdout
        assert "inf" not in p.stdout.lower().replace("nan/inf", ""), p.stdout


def test_integers_past_double_precision_are_told_apart(tmp_path):
    # Each condition prints its own checksum, each seed another: doubles round them all to
    # 2^60, which would make the conditions identical and the spread nothing.
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--mode", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        print("accuracy: 0.5")
        print(f"checksum: {2**60 + (1 if a.mode == 'a' else 100) + a.seed}")
        """)
    p = sweep(tmp_path, exp, "--param", "mode=a,b", "--seeds", "0-2")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["identical_conditions"] == [], d["identical_conditions"]
    for cond in d["conditions"]:
        cells = [c for c in d["cells"] if c["condition"] == cond["name"]]
        vals = [result_of(c)["metrics"]["values"]["checksum"] for c in cells]
        b = cond["metrics"]["checksum"]
        assert b["min"] == min(vals) and b["max"] == max(vals) and b["min"] != b["max"]
        assert b["std"] == pytest.approx(statistics.stdev(vals), rel=1e-9)


VERSIONED_MAIN = """
import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--x", required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
VERSION = 1
open(f"/ctl/ready-{a.seed}", "w").close()
while not os.path.exists("/ctl/go"):
    time.sleep(0.05)
print(f"code_version: {VERSION}")
"""


def test_an_experiment_edited_while_its_sweep_runs_is_not_pooled(tmp_path):
    """The later cells of a sweep whose code was edited meanwhile would run other code under
    the same sweep id: they are refused, and the statistics hold only the sweep's own code."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, VERSIONED_MAIN)
    cmd = [LABBOX, "sweep", "--json", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"),
           "--param", "x=a", "--seeds", "0-2", "--jobs", "1", "--policy", "permissive",
           "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (ctl / "ready-0").exists(), 120), "the first cell never started"
        main = exp / "main.py"
        main.write_text(main.read_text().replace("VERSION = 1", "VERSION = 2"))
        (ctl / "go").touch()
        out, err = proc.communicate(timeout=CALL_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    d = json.loads(out)
    assert proc.returncode != 0 and d["status"] == "failed", (proc.returncode, d["status"])
    assert "changed since sweep" in err, err
    versions = {c["metrics"].get("code_version") for c in d["cells"] if c["status"] == "completed"}
    assert versions == {1}, d["cells"]
    assert d["cells"][1]["status"] == "usage_error"
    assert "changed since sweep" in d["failures"][0]["summary"]
    stats = d["conditions"][0]["metrics"]["code_version"]
    assert stats["n"] == 1 and stats["mean"] == 1


def test_cells_run_with_other_packages_are_not_pooled_and_resume_reruns_them(tmp_path):
    """A package upgraded in the sweep's venv between an interrupted sweep and its resume: the
    reused cells ran with the old package, and are kept out of the statistics until rerun."""
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    sp = next((venv / "lib").glob("python3*")) / "site-packages"

    def install(v):  # what `pip install mylib==v.0` leaves
        for old in sp.glob("mylib*"):
            subprocess.run(["rm", "-rf", str(old)], check=True)
        (sp / "mylib.py").write_text(f"V = {v}\n")
        info = sp / f"mylib-{v}.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: mylib\nVersion: {v}.0\n")
        (info / "RECORD").write_text("")

    install(1)
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, """
        import argparse, os, time, mylib
        p = argparse.ArgumentParser()
        p.add_argument("--x", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        if a.seed == 1:
            open("/ctl/ready-1", "w").close()
            while not os.path.exists("/ctl/go"):
                time.sleep(0.05)
        print(f"mylib_version: {mylib.V}")
        """)
    cmd = [LABBOX, "sweep", "--json", "--python", str(venv / "bin" / "python"), "--runs-dir",
           str(tmp_path / "runs"), "--param", "x=a", "--seeds", "0-1", "--jobs", "1",
           "--policy", "permissive", "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (ctl / "ready-1").exists(), 120), "the second cell never started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=CALL_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    d = json.loads(out)
    assert d["cells"][0]["status"] == "completed", d["cells"]
    install(2)
    (ctl / "go").touch()
    p = labbox(*cmd[1:])
    d2 = doc_of(p)
    assert p.returncode != 0 and d2["status"] == "failed", (p.returncode, d2["status"])
    assert "other packages" in p.stderr, p.stderr
    c0, c1 = d2["cells"]
    assert c0["reused"] and c0["status"] == "environment_changed" and c0["metrics"]["mylib_version"] == 1
    assert c1["status"] == "completed" and c1["metrics"]["mylib_version"] == 2
    assert [f["class"] for f in d2["failures"]] == ["environment_changed"]
    stats = d2["conditions"][0]["metrics"]["mylib_version"]
    assert stats["n"] == 1 and stats["mean"] == 2
    # Resume runs the set-aside cell again, with the packages there are now.
    p3 = labbox("sweep", "--json", "--resume", d2["id"], "--runs-dir", tmp_path / "runs")
    d3 = doc_of(p3)
    assert p3.returncode == 0 and d3["status"] == "completed", p3.stderr
    assert [c["metrics"]["mylib_version"] for c in d3["cells"]] == [2, 2]
    assert d3["cells"][0]["run_id"] != c0["run_id"]


def test_a_result_named_with_a_unit_like_suffix_tells_conditions_apart(tmp_path):
    """aug=on raises coco/bbox_mAP_s (AP on small objects) alone: the conditions differ, and
    are not flagged as identical as if the parameter never reached the computation."""
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--aug", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        print("coco/bbox_mAP: 0.412")
        print(f"coco/bbox_mAP_s: {0.231 if a.aug == 'off' else 0.262}")
        print("coco/bbox_mAP_l: 0.530")
        """)
    p = sweep(tmp_path, exp, "--param", "aug=off,on", "--seeds", "0-1")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    assert d["identical_conditions"] == [], d["identical_conditions"]
    means = {c["name"]: c["metrics"]["coco/bbox_mAP_s"]["mean"] for c in d["conditions"]}
    assert sorted(means.values()) == [0.231, 0.262], means


def test_rerun_of_a_cell_repeats_its_environment_and_compare_shows_it(tmp_path):
    """A cell's env: (a template value, PYTHONHASHSEED={seed}) and its slot's thread count
    are what it computed with: rerun repeats them (a deterministic cell matches), and
    runs compare shows them where two conditions differ only there."""
    exp = write_exp(tmp_path, """
        import os
        model = os.environ.get("MODEL_NAME", "<unset>")
        print(f"model_chosen: {model}")
        print(f"acc: {0.9 if model == 'big' else 0.5}")
        print(f"hash_bucket: {hash('abc') % 1000}")
        print(f"omp_threads: {os.environ.get('OMP_NUM_THREADS', 'unset')}")
        """, yaml="""
        sweep:
          parameters:
            model: [big, small]
          seeds: [7]
          args: "--seed {seed}"
          env: {MODEL_NAME: "{model}", PYTHONHASHSEED: "{seed}"}
        """)
    runs = tmp_path / "runs"
    p = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--jobs", "2", exp)
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    big, small = d["cells"]
    assert big["metrics"]["model_chosen"] == "big"
    p = labbox("rerun", "--json", "-q", "--runs-dir", runs, big["run_id"])
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)
    assert rr["metrics"]["values"] == result_of(big)["metrics"]["values"], rr["metrics"]
    assert rr["rerun"]["verdict"] == "match", rr["rerun"]
    p = labbox("runs", "compare", "--json", "--runs-dir", runs, big["run_id"], small["run_id"])
    assert p.returncode == 0, p.stderr
    cfg = {c["key"]: (c["a"], c["b"]) for c in json.loads(p.stdout)["config"]}
    assert cfg["sweep.env"] == (["MODEL_NAME=big", "PYTHONHASHSEED=7"],
                                ["MODEL_NAME=small", "PYTHONHASHSEED=7"]), cfg
    p = labbox("runs", "compare", "--runs-dir", runs, big["run_id"], small["run_id"])
    assert "configuration: differs" in p.stdout and "MODEL_NAME=small" in p.stdout, p.stdout


def test_the_mean_of_integers_past_double_precision_lies_between_min_and_max(tmp_path):
    # 2^53+1 and 2^53+3: their mean 2^53+2 is a double; rounding 2^53+1 first gave 2^53.
    exp = write_exp(tmp_path, """
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--x", required=True)
        p.add_argument("--seed", type=int, required=True)
        a = p.parse_args()
        print(f"tokens_seen: {2**53 + 1 + 2 * a.seed}")
        """)
    p = sweep(tmp_path, exp, "--param", "x=a", "--seeds", "0-1")
    d = doc_of(p)
    assert p.returncode == 0, p.stderr
    b = d["conditions"][0]["metrics"]["tokens_seen"]
    assert (b["min"], b["max"]) == (2**53 + 1, 2**53 + 3), b
    assert b["mean"] == 2**53 + 2 and b["min"] <= b["mean"] <= b["max"], b
    assert b["ci95"]["low"] < b["mean"] < b["ci95"]["high"], b


def test_retry_failed_keeps_the_failures_it_retried(tmp_path):
    """A seed that failed and then completed on `--retry-failed` is not a clean
    first-attempt success: its cell keeps the earlier run (status, class), the sweep counts
    it as retried, its condition says how many seeds completed only after a retry, and the
    summary, the Markdown, CSV and HTML reports all show it."""
    exp = write_exp(tmp_path, """
        import sys
        a = dict(zip(sys.argv[1::2], sys.argv[2::2]))
        s = int(a['--seed'])
        if s == 1 and open("/data/mode").read().strip() == "diverge":
            raise FloatingPointError("loss is nan at step 812")
        print(f"acc: {0.80 + 0.01 * s}")
        """)
    flaky = tmp_path / "flaky"
    flaky.mkdir()
    flaky.chmod(0o777)  # the sandbox's uid reads it
    (flaky / "mode").write_text("diverge\n")
    (flaky / "mode").chmod(0o666)
    opts = ("--param", "method=m", "--seeds", "0-2", "--jobs", "1", "-v", f"{flaky}:/data:rw")
    first = doc_of(sweep(tmp_path, exp, *opts))
    [f] = first["failures"]
    assert f["seed"] == 1 and first["counts"]["retried"] == 0, first["counts"]
    (flaky / "mode").write_text("ok\n")
    p = sweep(tmp_path, exp, *opts, "--retry-failed")
    d = doc_of(p)
    assert d["id"] == first["id"]
    assert d["counts"]["completed"] == 3 and d["counts"]["retried"] == 1, d["counts"]
    cell = next(c for c in d["cells"] if c["seed"] == 1)
    [a] = cell["earlier_attempts"]
    assert a["run_id"] == f["run_id"] and a["status"] == f["status"] and a["class"] == f["class"]
    assert cell["run_id"] != f["run_id"] and cell["status"] == "completed"
    assert all(c["earlier_attempts"] == [] for c in d["cells"] if c["seed"] != 1)
    [cond] = d["conditions"]
    assert cond["completed"] == 3 and cond["completed_after_retry"] == 1
    [r] = d["retried_failures"]
    assert (r["seed"], r["run_id"], r["then"]) == (1, f["run_id"], "completed")
    # the text summary
    p = sweep(tmp_path, exp, *opts, "--retry-failed", json_out=False)
    assert p.returncode == 0, p.stderr
    assert "3/3, 1 after a retry" in p.stdout and f"retried: cell 1 (method=m) run {f['run_id']}" in p.stdout, p.stdout
    # the reports
    runs = str(tmp_path / "runs")
    md = labbox("report", d["id"], "--runs-dir", runs, "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "| 3/3 (1 after a retry) |" in md.stdout and "retried: the cell is now completed" in md.stdout, md.stdout
    csvp = labbox("report", d["id"], "--runs-dir", runs, "--format", "csv")
    import csv as _csv
    import io as _io
    [row] = list(_csv.DictReader(_io.StringIO(csvp.stdout)))
    assert row["completed"] == "3" and row["completed_after_retry"] == "1", row
    html = tmp_path / "r.html"
    h = labbox("report", d["id"], "--runs-dir", runs, "-o", str(html))
    assert h.returncode == 0, h.stderr
    page = html.read_text()
    assert "1 after a retry" in page and f["run_id"] in page and "retried: the cell is now completed" in page


def test_runs_list_sweep_resolves_the_id_as_report_and_resume_do(tmp_path):
    """runs list --sweep takes a whole sweep id or a unique prefix, as report and
    sweep --resume do: an id that is no sweep, or a prefix of two sweeps, is exit 2 naming it,
    never an empty list or two sweeps' cells listed as one."""
    exp = write_exp(tmp_path, 'print("accuracy: 0.9")\n')
    runs = tmp_path / "runs"
    ids = []
    for i in range(40):  # one-cell sweeps until two ids share their first character
        d = doc_of(sweep(tmp_path, exp, "--param", f"p={i}", args=("--p", "{p}")))
        ids.append(d["id"])
        if len({s[0] for s in ids}) < len(ids):
            break
    shared = next(s[0] for s in ids if sum(t[0] == s[0] for t in ids) > 1)
    sid = ids[0]

    def runs_list(sweep_arg):
        return labbox("runs", "list", "--json", "--runs-dir", runs, "--sweep", sweep_arg)

    p = runs_list(sid + "x")
    assert p.returncode == 2, (p.returncode, p.stdout)
    assert f"no sweep '{sid}x'" in p.stderr, p.stderr
    assert labbox("report", sid + "x", "--runs-dir", runs, "-o", tmp_path / "r.md").returncode == 2
    p = runs_list(shared)
    assert p.returncode == 2, (p.returncode, p.stdout)
    assert f"'{shared}' matches more than one sweep" in p.stderr, p.stderr
    assert labbox("sweep", "--resume", shared, "--runs-dir", runs).returncode == 2
    # a unique prefix and the whole id list that sweep's one cell, and only it
    for arg in (sid, sid[:12]):
        p = runs_list(arg)
        assert p.returncode == 0, p.stderr
        listed = json.loads(p.stdout)["runs"]
        assert [r["sweep"]["id"] for r in listed] == [sid], listed


def test_a_killed_sweep_reads_as_interrupted_everywhere_and_resume_finishes(tmp_path):
    """kill -9 of a sweep while cells run (the OOM killer, a reboot): its cells' runs end as
    interrupted, but the sweep itself writes nothing more. The next reader (report, runs list
    --sweep, sweep --resume) finds its lock free and settles sweep.json from the run index:
    status interrupted, each cell that ran with its run id and status, the interrupted ones
    among the failures. A live sweep is left alone. --resume then runs the rest."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    ctl.chmod(0o777)
    exp = write_exp(tmp_path, BLOCKING_MAIN)
    runs = tmp_path / "runs"
    cmd = [LABBOX, "sweep", "--json", "--python", PYTHON, "--runs-dir", str(runs),
           "--param", "x=a", "--seeds", "0-3", "--jobs", "2", "--policy", "permissive",
           "-v", f"{ctl}:/ctl:rw", str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: (ctl / "ready-0").exists() and (ctl / "ready-1").exists(),
                        120), "the first two cells never started"
        sj = next(runs.parent.glob("sweeps/*/sweep.json"))
        sid = sj.parent.name
        # alive: a reader leaves its document as the sweep writes it
        p = labbox("report", sid, "--runs-dir", runs, "--format", "md", "-o", tmp_path / "live.md")
        assert p.returncode == 0, p.stderr
        assert json.loads(sj.read_text())["status"] == "running"
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the cells' labboxes record their runs as interrupted (they outlive the sweep briefly)
    def cells_recorded():
        rs = [json.loads(r.read_text()) for r in runs.glob("*/result.json")]
        return len(rs) == 2 and all(r["status"] == "interrupted" for r in rs)
    assert wait_for(cells_recorded, 60), "the cells' runs were not recorded as interrupted"
    ran = {json.loads(r.read_text())["sweep"]["cell"]: json.loads(r.read_text())["id"]
           for r in runs.glob("*/result.json")}
    assert json.loads(sj.read_text())["status"] == "running"  # nothing settled it yet
    p = labbox("report", sid, "--runs-dir", runs, "--format", "md", "-o", tmp_path / "r.md",
               "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["failures"] == 2
    assert "interrupted" in (tmp_path / "r.md").read_text()
    d = json.loads(sj.read_text())
    assert d["status"] == "interrupted"
    cells = {c["cell"]: c for c in d["cells"]}
    for i, rid in ran.items():
        assert cells[i]["status"] == "interrupted" and cells[i]["run_id"] == rid, cells[i]
    assert sorted(f["run_id"] for f in d["failures"]) == sorted(ran.values())
    assert d["counts"]["interrupted"] == 2 and d["counts"]["not_run"] == 2, d["counts"]
    # the settled document is labbox's own (sealed): report still reads it without a warning
    p = labbox("report", sid, "--runs-dir", runs, "--format", "csv")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr
    p = labbox("runs", "list", "--json", "--runs-dir", runs, "--sweep", sid)
    assert p.returncode == 0, p.stderr
    assert sorted(r["status"] for r in json.loads(p.stdout)["runs"]) == ["interrupted"] * 2
    (ctl / "go").touch()
    p = labbox("sweep", "--json", "--resume", sid[:10], "--runs-dir", runs)
    assert p.returncode == 0, p.stderr
    d2 = doc_of(p)
    assert d2["status"] == "completed" and d2["counts"]["completed"] == 4, d2["counts"]
    assert json.loads(sj.read_text())["status"] == "completed"
