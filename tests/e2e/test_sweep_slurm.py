"""labbox sweep --mode slurm against a real one-node Slurm cluster (tests/services/slurm,
the `slurm` fixture of conftest.py, shared with test_slurm.py).

The cells to run go to the cluster as one job array (one sbatch call); each task runs labbox
on its node, which makes the cell's run there. Checked from the outside: the array in
squeue, every cell's own run directory and index row, a task cancelled with scancel (that
cell is the cluster's failure, the others complete, resume runs only it), a requeued task
counted once, Ctrl-C cancelling the array, and an unreachable controller. Needs root (the
daemons); tests/escape/run-as-user leaves this file out."""
import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON, PtyCapture, labbox, squeue, unique, wait_for, \
    wait_no_marker, write_exp

# One Slurm cluster for the session's worker: test_slurm.py and test_sweep_slurm.py share it
# (make check runs the suites with pytest-xdist, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("slurm")

# permissive: the experiment's own bookkeeping (a file in /state) is no finding to stop at
GRID = ("--param", "lr=0.1,0.2", "--seeds", "0-1", "--policy", "permissive")


def exp_with(tmp_path, slow=None, marker="unused"):
    """A cell prints loss = lr * (seed + 1); the cells SLOW selects ("all", "first": cell 0's
    first attempt only, told apart by a file in the /state volume) print MARKER and wait."""
    return write_exp(tmp_path, f"""
        import argparse, os, time
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float)
        p.add_argument("--seed", type=int)
        a = p.parse_args()
        slow = {slow!r}
        if slow == "all" or (slow == "first" and a.lr == 0.1 and a.seed == 0
                             and not os.path.exists("/state/first")):
            if slow == "first":
                open("/state/first", "w").write("x")
                print("first_only: 1")
            print({marker!r}, flush=True)
            time.sleep(600)
        print(f"loss: {{a.lr * (a.seed + 1)}}")
    """)


def state_dir(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    return ["-v", f"{state}:/state:rw"]


def sweep_bg(env, exp, runs, *opts):
    cmd = [LABBOX, "sweep", "--json", "--mode", "slurm", "--python", PYTHON, "--runs-dir",
           str(runs), *GRID, *opts, str(exp)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(p, timeout=150):
    out, err = p.communicate(timeout=timeout)
    try:
        return json.loads(out), err
    except ValueError:
        raise AssertionError(f"rc={p.returncode} stdout not JSON:\n{out[-2000:]}\n"
                             f"stderr:\n{err[-3000:]}") from None


def job_of(runs):
    """The sweep's Slurm job, from its sweep.json (written once sbatch answered)."""
    for f in (Path(runs).parent / "sweeps").glob("*/sweep.json"):
        try:
            jid = (json.loads(f.read_text()).get("slurm") or {}).get("job_id")
        except ValueError:
            continue
        if jid:
            return jid
    return None


def wait_marker(runs, marker, count=1, timeout=90):
    def seen():
        return sum(marker in p.read_text(errors="replace")
                   for p in Path(runs).glob("*/run.log")) >= count
    assert wait_for(seen, timeout, interval=0.2), f"{count} cell(s) never printed {marker}"
    jid = wait_for(lambda: job_of(runs), 30, interval=0.2) and job_of(runs)
    assert jid, "sweep.json never named the Slurm job"
    return jid


def index_rows(env, runs, sweep_id):
    p = labbox("runs", "list", "--json", "--runs-dir", runs, "--sweep", sweep_id, env=env)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    return d["runs"] if isinstance(d, dict) else d


def test_the_grid_is_one_job_array_and_each_cell_its_own_run(slurm, tmp_path):
    exp = exp_with(tmp_path)
    runs = tmp_path / "runs"
    p = labbox("sweep", "--json", "--mode", "slurm", "--python", PYTHON, "--runs-dir", runs,
               *GRID, "--jobs", "2", "--budget", "120", exp, env=slurm)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)  # stdout is the sweep document alone
    assert d["status"] == "completed" and d["executor"] == "slurm"
    assert d["counts"] == {"cells": 4, "completed": 4, "failed": 0, "interrupted": 0,
                           "not_run": 0, "reused": 0, "retried": 0}
    sl = d["slurm"]
    jid = sl["job_id"]
    assert jid.isdigit() and sl["array"] == "0-3%2"
    cmd = sl["command"]
    assert cmd[0] == "sbatch" and "--array=0-3%2" in cmd and "--time=5" in cmd
    assert any(a.startswith("--signal=B:TERM@") for a in cmd)
    # One sbatch call: every task of the sweep's name belongs to that one job.
    seen = squeue(slurm, "-t", "all", "-r", "-n", sl["job_name"], "-o", "%F|%K|%T")
    assert sorted(seen.splitlines()) == [f"{jid}|{k}|COMPLETED" for k in range(4)], seen
    assert [t["task"] for t in sl["tasks"]] == [f"{jid}_{k}" for k in range(4)]
    assert {t["node"] for t in sl["tasks"]} == {"localhost"}
    for c in d["cells"]:
        assert c["slurm"]["state"] == "COMPLETED" and c["slurm"]["requeues"] == 0
        res = json.loads((Path(c["run_dir"]) / "result.json").read_text())
        assert res["status"] == "completed" and res["sweep"]["cell"] == c["cell"]
        lr = float(c["params"]["lr"])
        assert abs(res["metrics"]["values"]["loss"] - lr * (c["seed"] + 1)) < 1e-9
        assert Path(c["run_dir"]).parent == runs  # the same per-cell run directories
    rows = index_rows(slurm, runs, d["id"])
    assert sorted(r["sweep"]["cell"] for r in rows) == [0, 1, 2, 3]
    assert f"on localhost (task {jid}_0" in p.stderr and f"submitted Slurm job {jid}" in p.stderr
    m = d["conditions"][0]["metrics"]["loss"]
    assert m["n"] == 2 and abs(m["mean"] - 0.15) < 1e-9


def test_a_cancelled_task_is_the_clusters_failure_and_resume_reruns_it(slurm, tmp_path):
    marker = unique("swc")
    exp = exp_with(tmp_path, "first", marker)
    runs = tmp_path / "runs"
    p = sweep_bg(slurm, exp, runs, *state_dir(tmp_path))
    try:
        jid = wait_marker(runs, marker)
        subprocess.run(["scancel", f"{jid}_0"], env=slurm, check=True, timeout=60)
        d, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, err
    c0 = d["cells"][0]
    assert c0["status"] == "infra_error" and c0["failure"]["class"] == "slurm_cancelled"
    assert f"{jid}_0" in c0["failure"]["summary"] and "cancelled outside labbox" in c0["failure"]["summary"]
    assert c0["slurm"]["state"] == "CANCELLED"
    assert [c["status"] for c in d["cells"][1:]] == ["completed"] * 3
    assert d["failures"][0]["class"] == "slurm_cancelled"
    assert wait_no_marker(marker, 30) == []

    # Resume submits the one unfinished cell, as a new job; the rest are reused.
    r = labbox("sweep", "--json", "--resume", d["id"], "--runs-dir", runs, env=slurm,
               timeout=150)
    assert r.returncode == 0, r.stderr
    d2 = json.loads(r.stdout)
    assert d2["status"] == "completed" and d2["counts"]["reused"] == 3
    assert d2["slurm"]["job_id"] != jid and d2["slurm"]["previous_jobs"] == [jid]
    assert [t["cell"] for t in d2["slurm"]["tasks"]] == [0]
    assert d2["cells"][0]["slurm"]["job_id"] == d2["slurm"]["job_id"]
    assert d2["cells"][1]["slurm"]["job_id"] == jid  # reused cells keep their task


def test_a_requeued_task_is_counted_once(slurm, tmp_path):
    marker = unique("swr")
    exp = exp_with(tmp_path, "first", marker)
    runs = tmp_path / "runs"
    p = sweep_bg(slurm, exp, runs, *state_dir(tmp_path))
    try:
        jid = wait_marker(runs, marker)
        task = f"{jid}_0"
        subprocess.run(["scontrol", "requeue", task], env=slurm, check=True, timeout=60)

        # Slurm holds a requeued task for two minutes; StartTime=now releases it.
        def released():
            st = squeue(slurm, "-j", task, "-t", "all", "-o", "%T")
            if st.startswith("PENDING"):
                subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"],
                               env=slurm, capture_output=True, timeout=60)
                return False
            return st.startswith("RUNNING") or st.startswith("COMPLETED")
        # What the task's attempts said, should it not come back (a failure seen only in
        # whole-suite runs on a loaded machine).
        outs = lambda: "\n".join(f"--- {o.name}:\n{o.read_text(errors='replace')[-3000:]}"
                                  for o in sorted(tmp_path.glob("sweeps/*/slurm/*_0.out")))
        assert wait_for(released, 90, interval=0.5), squeue(slurm, "-t", "all") + outs()
        d, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert d["counts"]["completed"] == 4 and d["counts"]["cells"] == 4
    c0 = d["cells"][0]
    assert c0["slurm"]["requeues"] == 1 and c0["slurm"]["state"] == "COMPLETED"
    res = json.loads((Path(c0["run_dir"]) / "result.json").read_text())
    assert res["metrics"]["values"] == {"loss": 0.1}  # the last attempt alone
    assert d["conditions"][0]["metrics"]["loss"]["n"] == 2  # counted once
    assert "requeued" in err
    # The index keeps both attempts; the sweep counts the one that finished.
    attempts = [r for r in index_rows(slurm, runs, d["id"]) if r["sweep"]["cell"] == 0]
    assert len(attempts) == 2 and {r["status"] for r in attempts} == {"completed", "interrupted"}


def test_ctrl_c_cancels_the_array_and_records_cells_interrupted(slurm, tmp_path):
    marker = unique("swi")
    exp = exp_with(tmp_path, "all", marker)
    runs = tmp_path / "runs"
    p = sweep_bg(slurm, exp, runs)
    try:
        jid = wait_marker(runs, marker, count=2)
        p.send_signal(signal.SIGINT)
        d, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGINT, err
    assert d["status"] == "interrupted" and d["counts"]["interrupted"] == 4
    assert "cancelling Slurm job" in err and f"--resume {d['id']}" in err
    assert wait_for(lambda: squeue(slurm, "-j", jid, "-t", "PD,R,CG,S") == "", 30), \
        squeue(slurm, "-t", "all")
    assert wait_no_marker(marker, 30) == []
    ran = [c for c in d["cells"] if c["run_dir"]]
    assert len(ran) >= 2
    for c in ran:
        res = json.loads((Path(c["run_dir"]) / "result.json").read_text())
        assert res["status"] == "interrupted"


def test_time_left_on_a_terminal_counts_the_running_tasks_estimates(slurm, tmp_path):
    """Before any cell has finished, the time left comes from the running cells'
    TIME_ESTIMATE lines, which their tasks' labboxes leave in the sweep's directory."""
    marker = unique("swe")
    exp = write_exp(tmp_path, f"""
        import argparse, time
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float)
        p.add_argument("--seed", type=int)
        p.parse_args()
        print("TIME_ESTIMATE: 300s")
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    runs = tmp_path / "runs"
    with PtyCapture() as term:
        p = subprocess.Popen([LABBOX, "sweep", "--mode", "slurm", "--python", PYTHON,
                              "--runs-dir", str(runs), *GRID, str(exp)], env=slurm,
                             stdout=subprocess.PIPE, stderr=term.slave, text=True)
        try:
            wait_marker(runs, marker, count=1)
            shown = lambda: re.findall(r"time left (\d+m\d+s|\d+h\d+m)", term.text())  # noqa
            assert wait_for(shown, 30, interval=0.3), term.text()
            # A cell that has only just started has an empty file: the one that printed
            # has 300.
            est = [f.read_text().strip()
                   for f in (Path(runs).parent / "sweeps").glob("*/estimates/*")]
            assert "300.000" in est, est
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=150)
        finally:
            if p.poll() is None:
                p.kill()
    assert p.returncode == 128 + signal.SIGINT
    assert wait_no_marker(marker, 30) == []


def test_the_sweep_budget_cancels_the_array_and_is_124(slurm, tmp_path):
    marker = unique("swb")
    exp = exp_with(tmp_path, "all", marker)
    p = labbox("sweep", "--json", "--mode", "slurm", "--python", PYTHON, "--runs-dir",
               tmp_path / "runs", *GRID, "--sweep-budget", "4", exp, env=slurm)
    assert p.returncode == 124, p.stderr
    d = json.loads(p.stdout)
    assert d["status"] == "timeout" and d["counts"]["interrupted"] == 4
    assert squeue(slurm, "-j", d["slurm"]["job_id"], "-t", "PD,R,CG,S") == ""
    assert wait_no_marker(marker, 30) == []


def test_labbox_killed_outright_takes_the_array_with_it(slurm, tmp_path):
    marker = unique("swk")
    exp = exp_with(tmp_path, "all", marker)
    runs = tmp_path / "runs"
    p = sweep_bg(slurm, exp, runs)
    try:
        jid = wait_marker(runs, marker)
        p.kill()  # SIGKILL: labbox has no say; its guardian cancels the job
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_for(lambda: squeue(slurm, "-j", jid, "-t", "PD,R,CG,S") == "", 60), \
        squeue(slurm, "-t", "all")
    assert wait_no_marker(marker, 30) == []


def test_a_controller_that_does_not_answer_is_125_and_nothing_runs(slurm, tmp_path):
    conf = Path(slurm["SLURM_CONF"]).read_text()
    dead = tmp_path / "slurm.conf"
    dead.write_text("\n".join("SlurmctldPort=47990" if l.startswith("SlurmctldPort=") else l
                              for l in conf.splitlines()) + "\n")
    exp = exp_with(tmp_path)
    runs = tmp_path / "runs"
    p = labbox("sweep", "--json", "--mode", "slurm", "--python", PYTHON, "--runs-dir", runs,
               *GRID, exp, env=dict(slurm, SLURM_CONF=str(dead)))
    assert p.returncode == 125, p.stderr
    msg = json.loads(p.stdout)["error"]["message"]
    assert "does not answer" in msg and str(dead) in msg, msg
    assert not runs.exists() or not any(runs.iterdir())  # never run locally instead
