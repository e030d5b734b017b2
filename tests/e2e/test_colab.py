"""labbox run --mode colab --drive DIR against the worker it writes, run locally exactly as
Colab runs it (`python3 DIR/labbox/labbox_worker.py --drive DIR`, a background process the
test starts), with a plain folder standing in for the synced Drive folder.

Verdicts and messages are asserted, never durations; polls are short so the tests are quick."""
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (CALL_TIMEOUT, LABBOX, PYTHON, REPO, Run, kill_marker, labbox,
                      pids_with_marker, run_exp, unique, wait_for, write_exp)

POLL = "0.1"
QUICKSTART = REPO / "examples" / "quickstart"


class Bridge:
    """One Drive folder, the labbox runs submitted to it and the workers serving it."""

    def __init__(self, root: Path):
        self.drive = root / "drive"
        self.drive.mkdir()
        self.lb = self.drive / "labbox"
        self.runs = root / "runs"
        self.workers = []

    def start(self, expdir, *opts, stale="10", env=None):
        cmd = [LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir", str(self.runs),
               "--mode", "colab", "--drive", str(self.drive), "--colab-poll", POLL,
               "--colab-stale", stale, *map(str, opts), str(expdir)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)

    def finish(self, proc, timeout=CALL_TIMEOUT) -> Run:
        out, err = proc.communicate(timeout=timeout)
        cp = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        return Run(cp, self.runs, 0.0)

    def jobs(self, where):
        d = self.lb / where
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []

    def wait_pending(self, proc):
        wait_for(lambda: self.jobs("pending") or proc.poll() is not None, 60)
        assert self.jobs("pending"), f"no job appeared in pending/ (labbox rc {proc.poll()})"
        return self.jobs("pending")[0]

    def worker(self, *extra, name=None):
        name = name or unique("w")
        cmd = [PYTHON, str(self.lb / "labbox_worker.py"), "--drive", str(self.drive), "--poll",
               POLL, "--name", name, *extra]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.worker_name = name
        self.workers.append(p)
        return p

    def stop_workers(self):
        logs = []
        for p in self.workers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                _, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            logs.append(err)
        self.workers = []
        return logs


@pytest.fixture
def bridge(tmp_path):
    b = Bridge(tmp_path)
    yield b
    b.stop_workers()


def test_quickstart_end_to_end_with_the_fields_of_local(bridge, tmp_path):
    proc = bridge.start(QUICKSTART)
    job = bridge.wait_pending(proc)
    # What labbox wrote for the worker: the script, a notebook, and a complete job.
    assert (bridge.lb / "labbox_worker.py").is_file()
    nb = json.loads((bridge.lb / "labbox_worker.ipynb").read_text())
    assert nb["nbformat"] == 4
    assert "google.colab" in "".join("".join(c["source"]) for c in nb["cells"])
    spec = json.loads((bridge.lb / "pending" / job / "job.json").read_text())
    assert spec["schema"] == "labbox.colab.job/1" and spec["entry"] == "main.py"
    assert "main.py" in spec["files"] and spec["env"]["PYTHONHASHSEED"] == "0"
    assert set(spec["metrics"]) == {"train_mse", "test_mse", "weight_error"}
    bridge.worker()
    r = bridge.finish(proc)
    assert r.rc == 0, r.why()
    res = r.result
    assert res["status"] == "completed"
    be = res["backend"]
    assert be["name"] == "colab" and be["isolated_by"] == "none"
    assert be["drive"] == str(bridge.drive) and be["version"] == be["worker_version_written"]
    assert be["worker"].startswith("w-")
    assert any(n.startswith("first heartbeat from " + be["worker"]) for n in be["notes"])
    assert "picked up by worker " + be["worker"] in r.stderr
    iso = res["isolation"]
    assert not any(iso["namespaces"].values()) and not iso["seccomp"]
    assert "not isolated by labbox" in iso["filesystem"]
    g = res["runtime_gate"]  # no gate on the Colab runtime, and said so
    assert g["installed"] is False and "Colab runtime" in g["note"], g
    assert set(res["metrics"]["conditions"]) == {"lambda_0.01", "lambda_1", "lambda_100"}
    assert "results.json" in res["metrics"]["files"]
    assert (r.exp / "results.json").is_file()
    assert "test_mse" in r.log()
    env_txt = (r.run_dir / "environment.txt").read_text()
    assert env_txt.startswith("Python 3.") and "Colab worker" in env_txt
    man = r.file_json("manifest.json")
    assert man["config"]["mode"] == "colab" and man["config"]["drive"] == str(bridge.drive)
    # The job came back and left the shared folder.
    assert bridge.jobs("done") == [] and bridge.jobs("running") == []
    # The same result.json fields as a local run of the same experiment.
    local = run_exp(QUICKSTART, tmp_path / "local-runs")
    assert local.rc == 0, local.why()
    assert set(res) == set(local.result)
    assert set(res["resources"]) == set(local.result["resources"])
    # rerun repeats it on the same backend and folder.
    rr = labbox("rerun", "--json", "--runs-dir", bridge.runs, res["id"])
    assert rr.returncode == 0, rr.stderr[-2000:]
    again = json.loads(rr.stdout)
    assert again["backend"]["name"] == "colab" and again["backend"]["drive"] == str(bridge.drive)
    # probe sees the worker and the folder.
    pr = labbox("probe", "--json", "--mode", "colab", "--drive", bridge.drive)
    assert pr.returncode == 0, pr.stderr
    c = json.loads(pr.stdout)["colab"]
    assert c["writable"] and c["worker_present"] and c["worker_current"]
    assert c["worker_version"] == c["worker_version_of_this_labbox"] == be["version"]
    assert c["last_worker_heartbeat"]["worker"] == be["worker"]
    assert c["jobs"] == {"pending": 0, "running": 0, "done": 0}


def test_budget_times_out_and_keeps_partial_results(bridge, tmp_path):
    exp = write_exp(tmp_path, """
        import json, time
        with open("results.json", "w") as f:
            json.dump({"cond_a": {"loss": 0.25}}, f)
        print("condition: cond_a")
        print("loss: 0.25", flush=True)
        time.sleep(600)
    """)
    proc = bridge.start(exp, "--budget", "2", "--grace", "1")
    bridge.wait_pending(proc)
    bridge.worker()
    r = bridge.finish(proc)
    assert r.rc == 124, r.why()
    res = r.result
    assert res["status"] == "timeout" and res["timed_out"] and res["partial"]
    assert res["failure"]["class"] == "timeout"
    assert "results.json" in res["metrics"]["files"]
    assert (r.exp / "results.json").is_file()
    assert "loss: 0.25" in r.log()


def test_worker_killed_mid_run_names_the_stale_heartbeat(bridge, tmp_path):
    marker = unique("colabkill")
    exp = write_exp(tmp_path, f"""
        import time
        print("{marker} started", flush=True)
        time.sleep(600)
    """)
    try:
        proc = bridge.start(exp, stale="5")
        bridge.wait_pending(proc)
        w = bridge.worker()
        def started():
            for j in bridge.jobs("running"):
                d = bridge.lb / "running" / j
                if (d / "heartbeat.json").exists() and (d / "run.log").exists() and \
                        marker in (d / "run.log").read_text(errors="replace"):
                    return True
            return False
        assert wait_for(started, 60)
        w.kill()  # as a Colab runtime that is recycled: no goodbye
        r = bridge.finish(proc)
        assert r.rc == 125, r.why()
        msg = r.result["infra_error"]["message"]
        assert "stopped sending heartbeats" in msg and w.worker_name in msg
        assert "the last one was at 20" in msg
        assert r.result["status"] == "infra_error"
        assert f"{marker} started" in r.log()
        # The worker's job dies with it (PR_SET_PDEATHSIG).
        assert wait_for(lambda: not pids_with_marker(marker), 30), pids_with_marker(marker)
    finally:
        kill_marker(marker)


def test_two_workers_compete_and_exactly_one_runs_the_job(bridge, tmp_path):
    exp = write_exp(tmp_path, """
        print("score: 1")
    """)
    proc = bridge.start(exp)
    job = bridge.wait_pending(proc)
    bridge.worker()
    bridge.worker()
    r = bridge.finish(proc)
    assert r.rc == 0, r.why()
    logs = bridge.stop_workers()
    claims = [log for log in logs if f"claimed job {job}" in log]
    assert len(claims) == 1, logs
    assert r.log().count("score: 1") == 1


def test_drive_folder_missing_is_125_naming_it(tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    gone = tmp_path / "no-such-drive"
    r = run_exp(exp, tmp_path / "runs", "--mode", "colab", "--drive", gone)
    assert r.rc == 125, r.why()
    assert str(gone) in r.result["infra_error"]["message"]
    assert "does not exist" in r.result["infra_error"]["message"]


def test_drive_folder_vanishing_mid_run_is_125(bridge, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    proc = bridge.start(exp)
    bridge.wait_pending(proc)
    shutil.move(str(bridge.drive), str(tmp_path / "drive-unmounted"))
    r = bridge.finish(proc)
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "vanished" in msg and str(bridge.lb) in msg


def test_no_worker_says_how_to_start_one_and_ends_at_labbox_timeout(bridge, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    proc = bridge.start(exp, "--colab-timeout", "2")
    r = bridge.finish(proc)
    assert r.rc == 125, r.why()
    cmd = f"labbox_worker.py' --drive '{bridge.drive}'"
    assert "no worker has picked up job" in r.stderr and cmd in r.stderr
    msg = r.result["infra_error"]["message"]
    assert "no worker picked up" in msg and "--colab-timeout" in msg and cmd in msg
    # Withdrawn: a worker starting later finds nothing to run.
    assert bridge.jobs("pending") == []


def test_worker_once_handles_what_is_pending_and_exits(bridge, tmp_path):
    exp = write_exp(tmp_path, "print('score: 2')\n")
    proc = bridge.start(exp)
    job = bridge.wait_pending(proc)
    once = subprocess.run([PYTHON, str(bridge.lb / "labbox_worker.py"), "--drive",
                           str(bridge.drive), "--once"], capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)
    assert once.returncode == 0, once.stderr
    assert f"claimed job {job}" in once.stderr
    r = bridge.finish(proc)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["score"] == 2
    # Nothing pending: --once returns at once.
    again = subprocess.run([PYTHON, str(bridge.lb / "labbox_worker.py"), "--drive",
                            str(bridge.drive), "--once"], capture_output=True, text=True,
                           timeout=CALL_TIMEOUT)
    assert again.returncode == 0 and "claimed" not in again.stderr


def test_sigterm_to_labbox_cancels_the_running_job(bridge, tmp_path):
    exp = write_exp(tmp_path, """
        import time
        print("going", flush=True)
        time.sleep(600)
    """)
    proc = bridge.start(exp, "--grace", "1")
    bridge.wait_pending(proc)
    bridge.worker()
    assert wait_for(lambda: any((bridge.lb / "running" / j / "heartbeat.json").exists()
                                for j in bridge.jobs("running")), 60)
    proc.send_signal(signal.SIGTERM)
    r = bridge.finish(proc)
    assert r.rc == 143, r.why()
    assert r.result["status"] == "interrupted"
    logs = bridge.stop_workers()
    assert any(": cancelled" in log for log in logs), logs
    assert bridge.jobs("running") == []


def test_unusable_exit_record_is_refused(bridge, tmp_path):
    """A worker's exit.json is outside input: garbage is a clear infra_error."""
    exp = write_exp(tmp_path, "print('x: 1')\n")
    proc = bridge.start(exp)
    job = bridge.wait_pending(proc)
    d = bridge.lb / "done" / job
    os.rename(bridge.lb / "pending" / job, d)
    (d / "exit.json").write_text('{"schema": "labbox.colab.exit/1", "status": 7}')
    r = bridge.finish(proc)
    assert r.rc == 125, r.why()
    assert "exit record" in r.result["infra_error"]["message"]
    assert "'status' is not a string" in r.result["infra_error"]["message"]
    assert bridge.jobs("done") == [job]  # kept as evidence


def test_limits_colab_cannot_enforce_are_refused(tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    (tmp_path / "drive").mkdir()
    r = labbox("run", "--json", "--mode", "colab", "--drive", tmp_path / "drive", "--memory",
               "1g", "--runs-dir", tmp_path / "runs", exp)
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert "--memory cannot be enforced in mode colab" in json.dumps(doc)
    r = labbox("run", "--mode", "colab", "--runs-dir", tmp_path / "runs", exp)
    assert r.returncode == 2 and "--drive DIR" in r.stderr


def test_yaml_mode_and_a_job_drive_has_not_finished_syncing(bridge, tmp_path):
    """mode: colab in labbox.yaml (the folder from --drive: labbox.yaml may not name one); a
    worker claims a job only once every file it lists has arrived with its size (Drive syncs
    file by file); a stale worker script is rewritten."""
    (bridge.lb).mkdir()
    (bridge.lb / "labbox_worker.py").write_text("# an old worker\n")
    exp = write_exp(tmp_path, "print('score: 3')\n",
                    yaml="mode: colab\n")
    cmd = [LABBOX, "run", "--json", "--python", PYTHON, "--drive", str(bridge.drive),
           "--runs-dir", str(bridge.runs),
           "--colab-poll", POLL, str(exp)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = bridge.wait_pending(proc)
    assert "an old worker" not in (bridge.lb / "labbox_worker.py").read_text()
    main = bridge.lb / "pending" / job / "exp" / "main.py"
    full = main.read_bytes()
    main.write_bytes(full[:3])  # as if Drive had brought part of it so far
    once = [PYTHON, str(bridge.lb / "labbox_worker.py"), "--drive", str(bridge.drive), "--once"]
    early = subprocess.run(once, capture_output=True, text=True, timeout=CALL_TIMEOUT)
    assert early.returncode == 0 and "claimed" not in early.stderr
    assert bridge.jobs("pending") == [job]
    main.write_bytes(full)
    late = subprocess.run(once, capture_output=True, text=True, timeout=CALL_TIMEOUT)
    assert f"claimed job {job}" in late.stderr
    r = bridge.finish(proc)
    assert r.rc == 0, r.why()
    assert r.result["backend"]["name"] == "colab"
    assert r.result["metrics"]["values"]["score"] == 3
    assert any("wrote the worker" in n for n in r.result["backend"]["notes"])


def test_sigint_before_any_worker_withdraws_the_job(bridge, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    proc = bridge.start(exp)
    bridge.wait_pending(proc)
    proc.send_signal(signal.SIGINT)
    r = bridge.finish(proc)
    assert r.rc == 130, r.why()
    assert r.result["status"] == "interrupted"
    assert bridge.jobs("pending") == [] and bridge.jobs("running") == []


def test_a_job_newer_than_the_worker_is_refused_by_it(bridge, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    proc = bridge.start(exp)
    job = bridge.wait_pending(proc)
    # Move it aside while it is edited, as labbox builds it, so no worker sees half of it.
    side = bridge.lb / "tmp" / "edit"
    os.rename(bridge.lb / "pending" / job, side)
    spec = json.loads((side / "job.json").read_text())
    spec["protocol"] = 99
    (side / "job.json").write_text(json.dumps(spec))
    os.rename(side, bridge.lb / "pending" / job)
    once = subprocess.run([PYTHON, str(bridge.lb / "labbox_worker.py"), "--drive",
                           str(bridge.drive), "--once"], capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)
    assert once.returncode == 0, once.stderr
    r = bridge.finish(proc)
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "protocol" in msg and "restart the worker" in msg


def test_labbox_timeout_of_a_running_job_cancels_it_as_a_budget(bridge, tmp_path):
    exp = write_exp(tmp_path, """
        import time
        print("loss: 0.5", flush=True)
        time.sleep(600)
    """)
    proc = bridge.start(exp, "--colab-timeout", "8", "--grace", "1")
    bridge.wait_pending(proc)
    bridge.worker()
    r = bridge.finish(proc)
    assert r.rc == 124, r.why()
    assert r.result["status"] == "timeout" and r.result["timed_out"]
    assert any("asked the worker to stop" in n for n in r.result["backend"]["notes"])
    logs = bridge.stop_workers()
    assert any(": cancelled" in log for log in logs), logs
