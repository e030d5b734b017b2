"""labbox run --mode slurm against a real one-node Slurm cluster (tests/services/slurm):
munged, slurmctld and slurmd of this session's own, with their own key, ports and state.

The job runs labbox on its node, which is this machine: the run directory is on the "shared"
file system trivially. Checked from the outside: the same records as a local run, the node's
isolation block, the budget, a job cancelled with scancel by someone else, labbox's own
SIGTERM cancelling the job (squeue no longer shows it active), an unreachable controller, and
rerun. Needs root; never skipped silently: without root or Slurm the tests fail and say why."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import GATE_SPAWN, LABBOX, PYTHON, REPO, labbox, pids_with_marker, run_exp, squeue, unique, \
    wait_for, wait_no_marker, write_exp

# One Slurm cluster for the session's worker: test_slurm.py and test_sweep_slurm.py share it
# (make check runs the suites with pytest-xdist, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("slurm")


def srun_exp(env, expdir, runs, *opts, **kw):
    return run_exp(expdir, runs, "--mode", "slurm", *opts, env=env, python=PYTHON, **kw)


def start_bg(env, expdir, runs, *opts):
    cmd = [LABBOX, "run", "--json", "--mode", "slurm", "--python", PYTHON, "--runs-dir",
           str(runs), *opts, str(expdir)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def running_job(env, runs, marker, timeout=90):
    """The job id of the one run under RUNS once its experiment has printed MARKER."""
    def found():
        for rd in Path(runs).glob("*/slurm/runs/*/run.log"):
            if marker in rd.read_text(errors="replace"):
                run_id = rd.parents[3].name
                jid = squeue(env, "-n", f"labbox-{run_id}", "-o", "%i")
                if jid:
                    return jid.split()[0]
        return None
    jid = wait_for(found, timeout, interval=0.2)
    assert jid, f"no running job printed {marker} within {timeout}s: {squeue(env, '-t', 'all')}"
    return jid


def finish(p, timeout=120):
    out, err = p.communicate(timeout=timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        raise AssertionError(f"rc={p.returncode} stdout not JSON:\n{out[-2000:]}\n"
                             f"stderr:\n{err[-2000:]}") from None
    return doc, err


def test_quickstart_on_slurm(slurm, tmp_path):
    r = srun_exp(slurm, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.file_json("result.json")
    assert res["status"] == "completed"
    be = res["backend"]
    assert be["name"] == "slurm" and be["engine"] == "slurm" and be["version"]
    assert be["job_id"].isdigit() and be["cluster"] == "labboxtest"
    assert be["node"] == "localhost" and be["job_state"] == "COMPLETED"
    assert be["restarts"] == 0
    assert any(a.startswith("--signal=B:TERM@") for a in be["command"]), be["command"]
    assert be["command"][0] == "sbatch"
    vals = res["metrics"]["conditions"]
    assert set(vals) == {"lambda_0.01", "lambda_1", "lambda_100"}
    assert "test_mse" in vals["lambda_1"]
    assert "results.json" in res["metrics"]["files"]
    assert (r.exp / "results.json").is_file()
    assert "test_mse:" in r.log()
    man = r.file_json("manifest.json")
    assert man["config"]["mode"] == "slurm" and "main.py" in man["files"]
    env_txt = (r.run_dir / "environment.txt").read_text()
    assert env_txt.startswith("Python 3.") and "numpy==" in env_txt

    # The same fields as a local run of the same experiment.
    local = run_exp(REPO / "examples" / "quickstart", tmp_path / "local")
    assert local.rc == 0, local.why()
    assert set(res) == set(local.result), set(res) ^ set(local.result)
    assert set(res["resources"]) == set(local.result["resources"])
    assert set(res["metrics"]) == set(local.result["metrics"])


def test_node_side_isolation_is_reported(slurm, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    exp = write_exp(tmp_path, f"""
        import os, socket
        try:
            print("read:", open({str(secret)!r}).read())
        except OSError as e:
            print("no read:", type(e).__name__)
        runs = {str(tmp_path / 'runs')!r}
        print("others:", sorted(os.listdir(runs)) if os.path.exists(runs) else "hidden")
        try:
            print("decoy:", open(runs + "/decoy-run/secret.txt").read())
        except OSError as e:
            print("no decoy:", type(e).__name__)
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=3)
            print("net: connected")
        except OSError as e:
            print("net: refused", e)
        print("ok: 1")
    """)
    # Another run's directory beside this one: the local backend hides it, so must the node.
    decoy = tmp_path / "runs" / "decoy-run"
    decoy.mkdir(parents=True)
    (decoy / "secret.txt").write_text("OTHER-RUN")
    r = srun_exp(slurm, exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "net: connected" not in log and "net: refused" in log
    # The submitting side's runs directory is hidden on the node, as the local backend
    # hides it.
    assert "OTHER-RUN" not in log and "no decoy:" in log, log
    assert "decoy-run" not in log.split("others:")[1].splitlines()[0], log
    iso = r.result["isolation"]
    node = json.loads((r.run_dir / "slurm" / "node.json").read_text())
    assert iso == node["isolation"]  # kept as the node reported it
    assert iso["namespaces"]["pid"] and iso["namespaces"]["mount"] and iso["seccomp"]
    assert iso["network"] == "none" and iso["capabilities"] == "none"
    assert r.result["backend"]["isolated_by"] == "labbox on the Slurm node"


def test_runtime_gate_asked_here_holds_on_the_node(slurm, tmp_path):
    """--runtime-gate is passed on: asked `on` here, the node's gate refuses the process the
    permissive static check let through."""
    exp = write_exp(tmp_path, GATE_SPAWN)
    r = srun_exp(slurm, exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on")
    assert r.rc == 0, r.why()
    assert "labbox runtime gate refused os.system" in r.log(), r.log()
    node = json.loads((r.run_dir / "slurm" / "node.json").read_text())
    g = node["runtime_gate"]
    assert g["mode"] == "on" and g["enforced"] is True, g
    assert any(e["event"] == "os.system" and e["refused"] for e in g["events"]), g
    assert "mode on" in r.result["runtime_gate"]["note"], r.result["runtime_gate"]
    # Uncaught there, the refusal is this run's verdict too, from the node's record.
    unc = write_exp(tmp_path / "unc", "import os\nos.system('true')\nprint('accuracy: 1')\n")
    r = srun_exp(slurm, unc, tmp_path / "runs2", "--policy", "permissive", "--runtime-gate", "on")
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert r.result["failure"]["gate_event"] == "os.system", r.why()


def test_budget_overrun_is_124_with_partial_results(slurm, tmp_path):
    exp = write_exp(tmp_path, """
        import json, time
        with open("results.json", "w") as f:
            json.dump({"cond_a": {"loss": 0.25}}, f)
        print("condition: cond_a")
        print("loss: 0.25", flush=True)
        time.sleep(600)
    """)
    r = srun_exp(slurm, exp, tmp_path / "runs", "--budget", "3", "--grace", "1")
    assert r.rc == 124, r.why()
    assert r.result["status"] == "timeout" and r.result["timed_out"] is True
    assert r.result["partial"] is True, r.why()
    assert r.result["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert r.result["metrics"]["files"]["results.json"] == {"cond_a": {"loss": 0.25}}
    be = r.result["backend"]
    # budget + grace + the node's overhead, in whole minutes
    assert be["time_limit_s"] >= 60 and "--time=3" in be["command"], be["command"]
    assert squeue(slurm, "-j", be["job_id"]) == ""


def test_scancel_from_outside_is_a_clear_verdict(slurm, tmp_path):
    marker = unique("sc")
    exp = write_exp(tmp_path, f"""
        import time
        print("loss: 0.5")
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    runs = tmp_path / "runs"
    p = start_bg(slurm, exp, runs)
    try:
        jid = running_job(slurm, runs, marker)
        subprocess.run(["scancel", jid], env=slurm, check=True, timeout=60)
        doc, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 125, (doc, err)
    assert doc["status"] == "infra_error"
    msg = doc["infra_error"]["message"]
    assert "cancelled outside labbox" in msg and jid in msg, msg
    assert doc["backend"]["job_state"] == "CANCELLED"
    assert doc["metrics"]["values"]["loss"] == 0.5  # what it printed is kept
    assert wait_no_marker(marker, 30) == []


def test_sigterm_to_labbox_cancels_the_job(slurm, tmp_path):
    marker = unique("st")
    exp = write_exp(tmp_path, f"""
        import time
        print("loss: 0.5")
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    runs = tmp_path / "runs"
    p = start_bg(slurm, exp, runs)
    try:
        jid = running_job(slurm, runs, marker)
        p.send_signal(signal.SIGTERM)
        doc, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 128 + signal.SIGTERM, (doc, err)
    assert doc["status"] == "interrupted"
    assert doc["metrics"]["values"]["loss"] == 0.5
    # Gone from the queue: nothing pending, running or completing.
    assert wait_for(lambda: squeue(slurm, "-j", jid, "-t", "PD,R,CG,S") == "", 30), \
        squeue(slurm, "-t", "all")
    assert wait_no_marker(marker, 30) == []
    assert "cancelling Slurm job" in err


def test_unreachable_controller_is_125(slurm, tmp_path):
    conf = Path(slurm["SLURM_CONF"]).read_text()
    dead = tmp_path / "slurm.conf"
    dead.write_text("\n".join("SlurmctldPort=47990" if l.startswith("SlurmctldPort=") else l
                              for l in conf.splitlines()) + "\n")
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = srun_exp(dict(slurm, SLURM_CONF=str(dead)), exp, tmp_path / "runs")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "does not answer" in msg and "sinfo" in msg and str(dead) in msg, msg
    assert r.result["backend"]["name"] == "slurm"  # never run locally instead
    assert not (r.exp / "results.json").exists() and "x: 1" not in r.log()

    # No Slurm client at all: the same refusal, naming what is missing.
    # (python3 alone on PATH, in a directory the check's sandbox can see: /tmp is private)
    bare = Path(tempfile.mkdtemp(prefix="labbox-nosbatch-", dir="/var/lib"))
    try:
        bare.chmod(0o755)  # the check runs as nobody
        (bare / "python3").symlink_to(PYTHON)
        r = srun_exp(dict(slurm, PATH=str(bare)), exp, tmp_path / "runs2")
    finally:
        shutil.rmtree(bare, ignore_errors=True)
    assert r.rc == 125, r.why()
    assert "sbatch" in r.result["infra_error"]["message"]


def test_unknown_partition_is_named(slurm, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = srun_exp(slurm, exp, tmp_path / "runs", "--partition", "nosuchpart")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "nosuchpart" in msg and "debug" in msg, msg


def test_labbox_yaml_slurm_settings_and_rerun(slurm, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n", yaml="""
        mode: slurm
        slurm:
          partition: debug
          memory: 256m
          cpus: 1
    """)
    runs = tmp_path / "runs"
    r = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp, env=slurm)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    be = doc["backend"]
    assert be["name"] == "slurm" and be["partition"] == "debug"
    assert "--partition=debug" in be["command"] and "--cpus-per-task=1" in be["command"]
    assert "--mem=320M" in be["command"], be["command"]  # the limit plus labbox's own
    assert "--memory" in be["node_command"]
    assert doc["metrics"]["values"]["answer"] == 42

    rr = labbox("rerun", "--json", "--runs-dir", runs, doc["id"], env=slurm)
    assert rr.returncode == 0, rr.stderr
    again = json.loads(rr.stdout)
    assert again["backend"]["name"] == "slurm" and again["backend"]["partition"] == "debug"
    assert again["backend"]["job_id"] != be["job_id"]
    assert again["rerun"]["metrics_match"] is True
    man = json.loads((Path(again["run_dir"]) / "manifest.json").read_text())
    assert man["config"]["mode"] == "slurm" and man["rerun_of"] == doc["id"]


def test_bad_slurm_settings_are_usage_errors(slurm, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n", yaml="mode: slurm\nslurm:\n  gpus: many\n")
    r = labbox("run", "--json", "--runs-dir", tmp_path / "runs", exp, env=slurm)
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["schema"] == "labbox.error/1" and "gpus" in json.dumps(doc)
    exp2 = write_exp(tmp_path, "print('x: 1')\n", name="exp2")
    r = labbox("run", "--json", "--mode", "slurm", "--partition", "a b", exp2, env=slurm)
    assert r.returncode == 2 and "partition" in r.stdout


def test_killed_labbox_leaves_no_job(slurm, tmp_path):
    marker = unique("kl")
    exp = write_exp(tmp_path, f"""
        import time
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    runs = tmp_path / "runs"
    p = start_bg(slurm, exp, runs)
    try:
        jid = running_job(slurm, runs, marker)
        p.kill()  # no cleanup: the guardian cancels the job
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_for(lambda: squeue(slurm, "-j", jid, "-t", "PD,R,CG,S") == "", 60), \
        squeue(slurm, "-t", "all")
    assert wait_no_marker(marker, 30) == []


def test_probe_mode_slurm(slurm, tmp_path):
    r = labbox("probe", "--json", "--mode", "slurm", env=slurm)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "slurm" and doc["slurm"]["cluster"] == "labboxtest"
    part = doc["slurm"]["partitions"]["debug"]
    assert part["default"] is True and part["nodes"] == 1 and part["available"] == "up"
    dead = tmp_path / "none.conf"
    r = labbox("probe", "--json", "--mode", "slurm", env=dict(slurm, SLURM_CONF=str(dead)))
    assert r.returncode == 125
    assert str(dead) in json.loads(r.stdout)["error"]["message"]


def test_signal_from_outside_is_not_a_timeout(slurm, tmp_path):
    marker = unique("sg")
    exp = write_exp(tmp_path, f"""
        import time
        print("loss: 0.5")
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    runs = tmp_path / "runs"
    p = start_bg(slurm, exp, runs, "--budget", "600", "--grace", "1")
    try:
        jid = running_job(slurm, runs, marker)
        subprocess.run(["scancel", "--batch", "--signal=TERM", jid], env=slurm, check=True,
                       timeout=60)
        doc, err = finish(p)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 125, (doc, err)
    assert doc["timed_out"] is False
    msg = doc["infra_error"]["message"]
    assert "signalled" in msg and "before the job's time limit" in msg, msg
    assert doc["metrics"]["values"]["loss"] == 0.5


def test_ctrl_c_while_pending_cancels_the_job(slurm, tmp_path):
    # A job holding every CPU of the one node keeps labbox's job PENDING.
    block = subprocess.run(["sbatch", "--parsable", "--cpus-per-task=2", "--mem=256",
                            "--output=/dev/null", "--wrap", "sleep 300"], env=slurm,
                           capture_output=True, text=True, timeout=60)
    assert block.returncode == 0, block.stderr
    blocker = block.stdout.strip().split(";")[0]
    try:
        exp = write_exp(tmp_path, "print('x: 1')\n")
        p = start_bg(slurm, exp, tmp_path / "runs", "--cpus", "1")
        lines = []
        try:
            for line in p.stderr:
                lines.append(line)
                if "PENDING" in line:
                    break
            assert any("PENDING" in l for l in lines), lines
            jid = next(l.split("Slurm job ")[1].split()[0] for l in lines if "submitted" in l)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        assert p.returncode == 128 + signal.SIGINT, (out, err)
        doc = json.loads(out)
        assert doc["status"] == "interrupted" and doc["backend"]["job_id"] == jid
        assert squeue(slurm, "-j", jid, "-t", "PD,R,CG,S") == ""
        assert "x: 1" not in (Path(doc["run_dir"]) / "run.log").read_text()
    finally:
        subprocess.run(["scancel", blocker], env=slurm, timeout=60)


def test_requeued_job_is_counted_once(slurm, tmp_path):
    # The experiment tells its attempts apart by a file in a writable volume: the first
    # attempt reports a metric the second does not, and waits to be requeued.
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    marker = unique("rq")
    exp = write_exp(tmp_path, f"""
        import os, time
        if not os.path.exists("/state/first"):
            open("/state/first", "w").write("x")
            print("first_only: 1")
            print({marker!r}, flush=True)
            time.sleep(600)
        print("loss: 0.5")
    """)
    runs = tmp_path / "runs"
    p = start_bg(slurm, exp, runs, "--policy", "permissive", "-v", f"{state}:/state:rw")
    try:
        jid = running_job(slurm, runs, marker)
        subprocess.run(["scontrol", "requeue", jid], env=slurm, check=True, timeout=60)
        # Slurm holds a requeued job for two minutes; an administrator's StartTime=now
        # releases it once it is pending again.
        def released():
            st = squeue(slurm, "-j", jid, "-t", "all", "-o", "%T|%r")
            if st.startswith("PENDING"):
                subprocess.run(["scontrol", "update", f"JobId={jid}", "StartTime=now"],
                               env=slurm, capture_output=True, timeout=60)
                return False
            return len(list(runs.glob("*/slurm/runs/*"))) == 2  # the second attempt began
        assert wait_for(released, 90, interval=0.5), squeue(slurm, "-t", "all")
        doc, err = finish(p, timeout=150)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, (doc, err)
    assert doc["status"] == "completed"
    assert doc["backend"]["restarts"] == 1
    assert doc["metrics"]["values"] == {"loss": 0.5}  # the first attempt's metric is gone
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "first_only: 1" in log and "Slurm restarted job" in log  # both attempts logged
    assert len(list((Path(doc["run_dir"]) / "slurm" / "runs").iterdir())) == 2


def _digest16(path):
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def test_a_labbox_planted_beside_runs_in_a_shared_directory_is_never_run(slurm, tmp_path):
    """The nodes run the labbox kept beside the runs directory. In a directory anyone may
    write (/tmp), another user's program under that name would run as the user: the copy
    lives inside the user's own runs directory instead, and the planted one never runs."""
    shared = Path(tempfile.mkdtemp(prefix="labbox-shared-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        marker = tmp_path / "planted-ran"
        bindir = shared / "bin"
        bindir.mkdir()
        planted = bindir / f"labbox-{_digest16(LABBOX)}"
        planted.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 0\n")
        planted.chmod(0o755)
        if os.geteuid() == 0:
            os.chown(planted, 65534, 65534)
            os.chown(bindir, 65534, 65534)
        else:
            bindir.chmod(0o777)
        r = srun_exp(slurm, write_exp(tmp_path, "print('x: 1')\n"), shared / "runs")
        assert r.rc == 0, r.why()
        assert not marker.exists()
        assert (shared / "runs" / "bin" / planted.name).is_file()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_a_nodes_labbox_directory_others_can_write_is_refused(slurm, tmp_path):
    proj = tmp_path / "proj"
    (proj / "bin").mkdir(parents=True)
    (proj / "bin").chmod(0o777)
    r = srun_exp(slurm, write_exp(tmp_path, "print('x: 1')\n"), proj / "runs")
    assert r.rc != 0 and r.rc != 1, r.why()
    msg = r.result["infra_error"]["message"] if r.result else r.why()
    assert str(proj / "bin") in msg and "not this user's own" in msg, msg
    assert list((proj / "bin").iterdir()) == []


def test_a_runs_directory_anyone_may_write_keeps_no_nodes_labbox(slurm, tmp_path):
    # A 1777 runs directory is accepted for runs, but anyone could make its missing bin/
    # their own before labbox copies itself there for the nodes: refused, naming it.
    # In a shared parent, where the nodes' labbox would be kept inside the runs.
    shared = Path(tempfile.mkdtemp(prefix="labbox-shared-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        runs = shared / "runs"
        runs.mkdir()
        runs.chmod(0o1777)
        r = srun_exp(slurm, write_exp(tmp_path, "print('x: 1')\n"), runs)
        assert r.rc != 0 and r.rc != 1, r.why()
        msg = r.result["infra_error"]["message"] if r.result else r.why()
        assert "others" in msg and str(runs / "bin") in msg, msg
        assert not (runs / "bin").exists()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
