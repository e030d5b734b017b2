"""`labbox run`: metrics, run directory, manifest, failures, budget, metric validation, output."""
import hashlib
import json
import threading
import time
import math
import os
import shutil
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (HOSTILE, LABBOX, PYTHON, REPO, describe_pids, host_can_enforce, kill_marker,
                      labbox, pids_with_marker, run_dirs, run_exp, unique, wait_for,
                      wait_no_marker, write_exp)

THREE_CONDITIONS = """
import json, time
import numpy as np

np.random.seed(0)
start = time.time()
x = np.random.randn(500, 8)
w = np.random.randn(8)
y = x @ w + 0.1 * np.random.randn(500)
print("TIME_ESTIMATE: 0.1s")
results = {}
for lr in ["0.001", "0.01", "0.1"]:
    v = np.zeros(8)
    for _ in range(200):
        v -= float(lr) * 2 * x.T @ (x @ v - y) / len(y)
    m = {"loss": float(np.mean((x @ v - y) ** 2)), "w_err": float(np.linalg.norm(v - w)),
         "steps": 200}
    print(f"condition: lr={lr}")
    for k, val in m.items():
        print(f"{k}: {val}")
    results[f"lr={lr}"] = m
with open("results.json", "w") as f:
    json.dump(results, f, indent=2)
print(f"Total time: {time.time() - start:.1f}s")
"""


def test_three_conditions_grouped_and_equal_to_results_json(tmp_path):
    exp = write_exp(tmp_path, THREE_CONDITIONS)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.result
    assert res["schema"] == "labbox.run/1"
    assert res["status"] == "completed", r.why()
    assert res["exit_code"] == 0 and res["timed_out"] is False and res["oom_killed"] is False
    assert res["failure"] is None, r.why()

    written = json.loads((r.exp / "results.json").read_text())
    m = res["metrics"]
    assert m["condition_order"] == ["lr=0.001", "lr=0.01", "lr=0.1"], r.why()
    assert set(m["conditions"]) == set(written), r.why()
    for cond, values in written.items():
        got = m["conditions"][cond]
        for k, v in values.items():
            assert got[k] == pytest.approx(v, rel=1e-12), (cond, k, got, values)
    # the three conditions really differ (the metrics were not all taken from one group)
    losses = [m["conditions"][c]["loss"] for c in m["condition_order"]]
    assert len(set(losses)) == 3
    assert m["files"]["results.json"] == written
    assert m["time_estimate_s"] == pytest.approx(0.1)
    # the source directory is left as it was: results land in the staged copy only
    assert not (exp / "results.json").exists()
    assert r.run_dir.parent == (tmp_path / "runs").resolve() or r.run_dir.parent == tmp_path / "runs"
    for name in ("exp", "run.log", "result.json", "manifest.json", "environment.txt"):
        assert (r.run_dir / name).exists(), name
    # result.json on disk is the document --json printed
    assert r.file_json("result.json") == res
    assert "condition: lr=0.01" in r.log()


def test_manifest_and_environment(tmp_path):
    exp = write_exp(tmp_path, THREE_CONDITIONS, files={"data/params.txt": "alpha=1\n"})
    r = run_exp(exp, tmp_path / "runs", "-e", "SEED=3", args=["--flag", "x"])
    assert r.rc == 0, r.why()
    man = r.file_json("manifest.json")
    for key in ("started_at", "ended_at", "duration_s", "command", "config", "interpreter",
                "git", "files"):
        assert key in man, f"manifest.json lacks {key}: {man}"
    assert isinstance(man["command"], list) and man["command"], man["command"]
    assert "--flag" in man["command"] and "x" in man["command"], man["command"]
    assert isinstance(man["config"], dict) and man["config"]
    # the resolved config names the entry point and the arguments it was given
    assert "main.py" in json.dumps(man["config"]), man["config"]
    assert "--flag" in json.dumps(man["config"]), man["config"]
    assert man["duration_s"] >= 0
    assert man["git"] is None or "commit" in man["git"]
    # what the run is seeded with: the code's seed calls, and the hash seed labbox sets
    assert man["seeds"] == {"found_in_code": [{"file": "main.py", "line": 4, "col": 1,
                                               "call": "numpy.random.seed", "lib": "numpy",
                                               "value": 0}],
                            "PYTHONHASHSEED": "0",
                            "PYTHONHASHSEED_set_by": "labbox"}, man["seeds"]
    # sha256 of every staged file, as the host computes it
    main_sha = hashlib.sha256((exp / "main.py").read_bytes()).hexdigest()
    assert man["files"].get("main.py") == main_sha, man["files"]
    params_sha = hashlib.sha256((exp / "data" / "params.txt").read_bytes()).hexdigest()
    assert man["files"].get("data/params.txt") == params_sha, man["files"]
    # interpreter: the one asked for, with its real version
    real_version = subprocess.run([PYTHON, "--version"], capture_output=True,
                                  text=True).stdout.split()[1]
    assert real_version in man["interpreter"]["version"], man["interpreter"]
    assert man["interpreter"]["path"].endswith("python3") or "python" in man["interpreter"]["path"]

    env_txt = (r.run_dir / "environment.txt").read_text()
    assert re.search(r"^Python 3\.\d+\.\d+", env_txt, re.M), env_txt[:500]
    assert f"Python {real_version}" in env_txt, env_txt[:500]
    # the package list (pip freeze) of that interpreter, with numpy as the host has it
    numpy_version = subprocess.run([PYTHON, "-c", "import numpy; print(numpy.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    assert re.search(rf"^numpy==\s*{re.escape(numpy_version)}\s*$", env_txt, re.M), env_txt[:2000]


def commit_all(repo):
    """git init REPO and commit everything in it; returns the commit id."""
    def g(*a):
        return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True,
                              text=True, env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                              "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                                              "GIT_COMMITTER_EMAIL": "t@t"})
    g("init", "-q")
    g("add", ".")
    g("commit", "-q", "-m", "init")
    return g("rev-parse", "HEAD").stdout.strip()


def test_git_commit_recorded_when_experiment_in_repo(tmp_path):
    repo = tmp_path / "repo"
    exp = write_exp(repo, THREE_CONDITIONS)
    head = commit_all(repo)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    man = r.file_json("manifest.json")
    assert man["git"] and man["git"]["commit"] == head, man["git"]


def test_git_state_survives_ctrl_c(tmp_path):
    """Ctrl-C signals labbox's whole process group; the run is recorded as interrupted, and the
    repository's state (read concurrently, here a diff larger than a pipe holds) is kept."""
    repo = tmp_path / "repo"
    exp = write_exp(repo, """
        import time
        print("EXP-STARTED", flush=True)
        time.sleep(300)
    """, files={"data.txt": "v0\n"})
    head = commit_all(repo)
    (exp / "data.txt").write_text("".join(f"line {i} of a long uncommitted change\n"
                                          for i in range(6000)))
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--python", PYTHON, "--runs-dir", str(runs), str(exp)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        assert wait_for(lambda: any("EXP-STARTED" in (d / "run.log").read_text()
                                    for d in run_dirs(runs) if (d / "run.log").exists()), 60)
        os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    (rd,) = run_dirs(runs)
    assert json.loads((rd / "result.json").read_text())["status"] == "interrupted"
    man = json.loads((rd / "manifest.json").read_text())
    assert man["git"] and man["git"]["commit"] == head and man["git"]["dirty"] is True, man["git"]
    assert man["git_diff"]["bytes"] > 65536 and "+line 5999 of a long" in man["git_diff"]["diff"]


def test_runs_directory_inside_the_experiment_is_not_staged(tmp_path):
    """`labbox run --runs-dir runs .` from inside the experiment: each run stages the
    experiment, not the runs before it (nor itself, which never ended)."""
    exp = write_exp(tmp_path, "print('x: 1')\n")
    for _ in range(2):
        r = run_exp(exp, exp / "runs", cwd=exp)
        assert r.rc == 0, r.why()
    man = r.file_json("manifest.json")
    assert not any(f.startswith("runs/") for f in man["files"]), sorted(man["files"])
    assert "runs" in man["skipped_files"], man["skipped_files"]
    assert not (r.exp / "runs").exists()


def test_quickstart_example_passes(tmp_path):
    qs = REPO / "examples" / "quickstart"
    r = run_exp(qs, tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.result
    assert res["status"] == "completed"
    m = res["metrics"]
    assert m["condition_order"] == ["lambda_0.01", "lambda_1", "lambda_100"], r.why()
    for cond in m["condition_order"]:
        for name in ("train_mse", "test_mse", "weight_error"):
            v = m["conditions"][cond][name]
            assert isinstance(v, (int, float)) and math.isfinite(v), (cond, name, v)
    assert m["time_estimate_s"] is not None and m["time_estimate_s"] >= 0
    assert not m.get("time_guard"), m
    assert res["metric_issues"] == [], res["metric_issues"]
    assert m["files"]["results.json"]["lambda_1"]["test_mse"] == m["conditions"]["lambda_1"]["test_mse"]


def test_quickstart_human_mode(tmp_path):
    """Without --json: the experiment's lines stream to stdout, then a verdict with metrics."""
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               REPO / "examples" / "quickstart")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "TIME_ESTIMATE:" in p.stdout and "condition: lambda_100" in p.stdout, p.stdout
    tail = p.stdout.split("Total time:")[-1]
    assert re.search(r"completed|\bok\b|passed|success", tail, re.I), p.stdout[-2000:]
    assert "test_mse" in tail, p.stdout[-2000:]


def test_default_runs_dir_is_under_cwd(tmp_path):
    exp = write_exp(tmp_path, "print('score: 1.5')\n")
    work = tmp_path / "work"
    work.mkdir()
    p = labbox("run", "--json", "--python", PYTHON, exp, cwd=work)
    assert p.returncode == 0, p.stdout + p.stderr
    res = json.loads(p.stdout)
    dirs = run_dirs(work / ".labbox" / "runs")
    assert len(dirs) == 1, dirs
    assert Path(res["run_dir"]).resolve() == dirs[0].resolve()
    assert res["metrics"]["values"]["score"] == 1.5


def test_two_runs_get_distinct_run_dirs(tmp_path):
    exp = write_exp(tmp_path, "print('score: 2')\n")
    a = run_exp(exp, tmp_path / "runs")
    b = run_exp(exp, tmp_path / "runs")
    assert a.rc == 0 and b.rc == 0, a.why() + b.why()
    assert a.result["id"] != b.result["id"]
    assert a.run_dir != b.run_dir
    assert len(run_dirs(tmp_path / "runs")) == 2


def test_metric_line_forms(tmp_path):
    exp = write_exp(tmp_path, r"""
        print("acc: 0.5")
        print("neg: -3")
        print("sci: 1.5e-3")
        print("plus: +2.25E+2")
        print("not a metric line")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v["acc"] == 0.5 and v["neg"] == -3 and v["sci"] == pytest.approx(1.5e-3)
    assert v["plus"] == pytest.approx(225.0)


def test_yaml_entry_args_and_cli_args(tmp_path):
    exp = write_exp(tmp_path, None, yaml="""
        entry: train.py
        args: ["--lr", "0.5"]
    """, files={"train.py": "import sys\nprint('argv: ' + ' '.join(sys.argv[1:]))\n"
                            "print('lr: ' + sys.argv[sys.argv.index('--lr') + 1])\n"})
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["lr"] == 0.5, r.why()
    assert "argv: --lr 0.5" in r.log()

    exp2 = write_exp(tmp_path, "import sys\nprint('nargs: %d' % len(sys.argv[1:]))\n"
                               "print('args=' + repr(sys.argv[1:]))\n", name="exp2")
    r2 = run_exp(exp2, tmp_path / "runs2", args=["a b", "--c", ""])
    assert r2.rc == 0, r2.why()
    assert r2.result["metrics"]["values"]["nargs"] == 3
    assert "args=['a b', '--c', '']" in r2.log()


def test_cwd_is_staged_copy_and_env_flag(tmp_path):
    exp = write_exp(tmp_path, """
        import os
        print("cwd=" + os.getcwd())
        print("files=" + ",".join(sorted(os.listdir("."))))
        print("K=" + os.environ.get("MY_KEY", "<unset>"))
        open("made_here.txt", "w").write("ok")
    """, files={"data.csv": "a,b\n1,2\n", "labbox.yaml": "metrics: none\n"})
    # It reports no metric, and says so: else exiting 0 with none is invalid_metrics.
    r = run_exp(exp, tmp_path / "runs", "-e", "MY_KEY=hello world")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "files=data.csv,labbox.yaml,main.py" in log, log
    assert "K=hello world" in log, log
    assert (r.exp / "made_here.txt").read_text() == "ok"
    assert (r.exp / "data.csv").read_text() == "a,b\n1,2\n"
    assert not (exp / "made_here.txt").exists()


# --- failures ---------------------------------------------------------------------------------

def test_exception_exits_1_with_traceback_in_log(tmp_path):
    tag = unique("boom")
    exp = write_exp(tmp_path, f"""
        print("loss: 0.3")
        def f():
            raise ValueError("{tag}")
        f()
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    res = r.result
    assert res["status"] == "failed"
    assert res["exit_code"] == 1
    log = r.log()
    assert "Traceback (most recent call last)" in log and f"ValueError: {tag}" in log, log
    assert res["failure"]["class"] == "code_error", res["failure"]
    assert any(tag in line for line in res["failure"]["evidence"]), res["failure"]
    assert res["log"]["bytes"] == (r.run_dir / "run.log").stat().st_size
    assert res["log"]["truncated"] is False


def test_run_log_keeps_each_streams_lines_whole(tmp_path):
    """A stderr line written in two parts with a stdout line between them: run.log shows
    both lines whole (reordered if need be), never one glued to the other, and no blank
    line from the late newline."""
    exp = write_exp(tmp_path, """
        import sys, time
        for i in range(3):
            sys.stderr.write(f"stderr line {i}: x = {i}"); sys.stderr.flush()
            time.sleep(0.1)
            print(f"acc_{i}: 0.{i}", flush=True)
            time.sleep(0.1)
            sys.stderr.write("\\n"); sys.stderr.flush()
        sys.stderr.write("last words")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    lines = r.log().split("\n")
    want = {f"stderr line {i}: x = {i}" for i in range(3)} | {f"acc_{i}: 0.{i}" for i in range(3)}
    assert set(lines) == want | {"last words"}, lines
    assert len(lines) == 7, lines
    assert r.result["metrics"]["values"] == {"acc_0": 0.0, "acc_1": 0.1, "acc_2": 0.2}


def test_missing_module_is_missing_package(tmp_path):
    exp = write_exp(tmp_path, "import numpy\nimport labbox_no_such_pkg_zz\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "missing_package", f
    assert "labbox_no_such_pkg_zz" in (f["summary"] + " ".join(f["evidence"])), f
    assert "ModuleNotFoundError" in r.log()


def test_nonzero_exit_without_traceback(tmp_path):
    exp = write_exp(tmp_path, "import sys\nprint('acc: 0.1')\nsys.exit(3)\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    assert r.result["status"] == "failed" and r.result["exit_code"] == 3


def test_killed_by_signal_is_failure(tmp_path):
    exp = write_exp(tmp_path, "import os, signal\nprint('x: 1', flush=True)\n"
                              "os.kill(os.getpid(), signal.SIGSEGV)\n")
    r = run_exp(exp, tmp_path / "runs", *HOSTILE)
    assert r.rc == 1, r.why()
    assert r.result["signal"] in (signal.SIGSEGV, "SIGSEGV"), r.why()


# --- budget -----------------------------------------------------------------------------------

PARTIAL_THEN_SLEEP = """
import json, time, signal
{extra}
with open("results.json", "w") as f:
    json.dump({{"cond_a": {{"loss": 0.25}}, "partial": True}}, f)
print("condition: cond_a")
print("loss: 0.25")
print("SLEEPING", flush=True)
time.sleep(120)
print("never")
"""


@pytest.mark.parametrize("ignore_term", [False, True], ids=["plain", "ignores-SIGTERM"])
def test_budget_exceeded_keeps_partial_results(tmp_path, ignore_term):
    extra = "signal.signal(signal.SIGTERM, signal.SIG_IGN)" if ignore_term else ""
    exp = write_exp(tmp_path, PARTIAL_THEN_SLEEP.format(extra=extra))
    budget, grace = 3, 2
    r = run_exp(exp, tmp_path / "runs", "--budget", budget, "--grace", grace)
    assert r.rc == 124, r.why()
    assert r.elapsed < budget + grace + 15, f"returned after {r.elapsed:.1f}s"
    res = r.result
    assert res["status"] == "timeout" and res["timed_out"] is True, r.why()
    assert res["partial"] is True, r.why()
    assert res["failure"] and res["failure"]["class"] == "timeout", res["failure"]
    doc = {"cond_a": {"loss": 0.25}, "partial": True}
    assert json.loads((r.exp / "results.json").read_text()) == doc
    assert res["metrics"]["files"]["results.json"] == doc
    assert res["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert "never" not in r.log() and "SLEEPING" in r.log()


def test_budget_env_and_time_guard(tmp_path):
    """LABBOX_BUDGET tells the experiment its budget; TIME_GUARD lines are reported. A guard
    that fires after half of the budget is the harness working (partial, valid); one that
    fires before half of it cut the results short for no reason (invalid, exit 4)."""
    exp = write_exp(tmp_path, """
        import os
        b = os.environ.get("LABBOX_BUDGET")
        print("budget_seen: " + str(float(b)))
        print("TIME_GUARD: 32.0s - saving partial results")
    """)
    r = run_exp(exp, tmp_path / "runs", "--budget", 40)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["budget_seen"] == 40.0, r.why()
    assert r.result["metrics"]["time_guard"], r.result["metrics"]
    assert r.result["partial"] is True

    early = write_exp(tmp_path / "early", """
        print("acc: 0.5")
        print("TIME_GUARD: 1.0s - saving partial results")
    """)
    r = run_exp(early, tmp_path / "runs", "--budget", 40)
    assert r.rc == 4, r.why()
    kinds = [i["kind"] for i in r.result["metric_issues"]]
    assert kinds == ["time_guard_early"], r.result["metric_issues"]


# --- metric validation ------------------------------------------------------------------------

def test_nan_metric_exits_4(tmp_path):
    exp = write_exp(tmp_path, """
        import json
        print("acc: 0.9")
        print("loss: nan")
        json.dump({"loss": float("nan"), "acc": 0.9}, open("results.json", "w"))
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    res = r.result
    assert res["status"] == "invalid_metrics"
    assert res["metrics"]["values"]["loss"] == "NaN", res["metrics"]
    assert res["metrics"]["values"]["acc"] == 0.9
    assert res["metrics"]["files"]["results.json"]["loss"] == "NaN"
    issues = res["metric_issues"]
    assert any(i["metric"] == "loss" for i in issues), issues
    assert all(set(i) >= {"kind", "metric", "where", "message"} for i in issues), issues


def test_inf_metric_exits_4(tmp_path):
    exp = write_exp(tmp_path, "print('grad_norm: -inf')\nprint('acc: 1')\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["metrics"]["values"]["grad_norm"] == "-Infinity"
    assert any(i["metric"] == "grad_norm" for i in r.result["metric_issues"])


def test_declared_metric_missing_exits_4(tmp_path):
    exp = write_exp(tmp_path, "print('loss: 0.5')\n", yaml="metrics: [loss, accuracy]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert any(i["metric"] == "accuracy" for i in r.result["metric_issues"]), r.result
    assert not any(i["metric"] == "loss" for i in r.result["metric_issues"]), r.result


def test_declared_metrics_flag(tmp_path):
    exp = write_exp(tmp_path, "print('loss: 0.5')\n")
    ok = run_exp(exp, tmp_path / "runs", "--metrics", "loss")
    assert ok.rc == 0, ok.why()
    bad = run_exp(exp, tmp_path / "runs", "--metrics", "loss,f1")
    assert bad.rc == 4, bad.why()
    assert any(i["metric"] == "f1" for i in bad.result["metric_issues"])


def test_declared_metric_found_per_condition_and_in_results_json(tmp_path):
    exp = write_exp(tmp_path, """
        import json
        for c in ("a", "b"):
            print("condition: " + c)
            print("loss: 0.%d" % len(c))
        json.dump({"a": {"acc": 0.5}, "b": {"acc": 0.6}}, open("results.json", "w"))
    """, yaml="metrics: [loss, acc]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metric_issues"] == []


# --- output modes and log ---------------------------------------------------------------------

def test_json_mode_stdout_is_only_the_document(tmp_path):
    exp = write_exp(tmp_path, "import sys\nprint('EXP-STDOUT-LINE')\n"
                              "print('EXP-STDERR-LINE', file=sys.stderr)\nprint('m: 1')\n")
    r = run_exp(exp, tmp_path / "runs")  # run_exp already fails if stdout is not one document
    assert r.rc == 0, r.why()
    assert "EXP-STDOUT-LINE" not in r.stdout
    assert "EXP-STDOUT-LINE" in r.stderr
    log = r.log()
    assert "EXP-STDOUT-LINE" in log and "EXP-STDERR-LINE" in log


def test_quiet_mode(tmp_path):
    exp = write_exp(tmp_path, "print('EXP-QUIET-LINE')\nprint('m: 1')\n")
    p = labbox("run", "-q", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "EXP-QUIET-LINE" not in p.stdout + p.stderr
    (rd,) = run_dirs(tmp_path / "runs")
    assert "EXP-QUIET-LINE" in (rd / "run.log").read_text()


def test_human_mode_streams_live(tmp_path):
    exp = write_exp(tmp_path, """
        import time
        print("FIRST-LIVE-LINE", flush=True)
        time.sleep(4)
        print("SECOND-LIVE-LINE", flush=True)
    """)
    p = subprocess.Popen([LABBOX, "run", "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"),
                          str(exp)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen_while_running = False
        for line in p.stdout:
            if "FIRST-LIVE-LINE" in line:
                seen_while_running = p.poll() is None
                break
        rest = p.stdout.read()
        p.wait(timeout=60)
    finally:
        p.kill()
        p.wait()
    assert seen_while_running, "the first line only appeared after the experiment ended"
    assert "SECOND-LIVE-LINE" in rest


def test_log_limit_caps_run_log(tmp_path):
    exp = write_exp(tmp_path, """
        import sys
        for i in range(20000):
            print("x" * 99)
        print("final: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", "--log-limit", "16k")
    assert r.rc == 0, r.why()
    size = (r.run_dir / "run.log").stat().st_size
    assert size <= 16 * 1024 + 1024, size
    assert r.result["log"]["truncated"] is True, r.result["log"]
    assert r.result["metrics"]["values"]["final"] == 1, "metrics past the log cap were lost"


# --- resource limits --------------------------------------------------------------------------

def test_memory_limit_oom(tmp_path):
    exp = write_exp(tmp_path, """
        print("allocating", flush=True)
        blocks = []
        for i in range(64):
            blocks.append(b"\x01" * (64 * 1024 * 1024))  # 4 GiB in the end, all touched
        print("allocated_mb: %d" % (64 * 64))
    """)
    r = run_exp(exp, tmp_path / "runs", "--memory", "256m")
    if r.rc == 125 and not host_can_enforce("memory"):
        pytest.skip("host has no writable memory cgroup; labbox refused --memory (125)")
    assert r.rc == 137, r.why()
    assert r.result["status"] == "oom" and r.result["oom_killed"] is True, r.why()
    assert r.result["failure"]["class"] == "oom"
    assert "allocated_mb" not in r.log()


def test_pids_limit(tmp_path):
    exp = write_exp(tmp_path, """
        import subprocess, sys
        procs, err = [], None
        try:
            for i in range(60):
                procs.append(subprocess.Popen(["sleep", "30"]))
        except OSError as e:
            err = e
        print("started: %d" % len(procs))
        for p in procs:
            p.kill(); p.wait()
    """)
    r = run_exp(exp, tmp_path / "runs", "--pids-limit", "16", *HOSTILE)
    if r.rc == 125 and not host_can_enforce("pids"):
        pytest.skip("host has no writable pids cgroup; labbox refused --pids-limit (125)")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["started"] < 16, r.why()


def test_a_user_whose_hard_process_limit_is_below_the_default_still_runs(tmp_path):
    """Where no pids cgroup can be had, the default process limit is RLIMIT_NPROC, which the
    run's user namespace cannot raise: a user whose hard limit is lower (a login node's
    limits.conf) ran nothing at all (exit 125). The default then takes the user's own limit,
    and result.json says the number in effect."""
    if os.geteuid() != 0:
        pytest.skip("drops to uid 65534 with a lower hard limit: needs root")
    import tempfile
    w = Path(tempfile.mkdtemp(prefix="lbx-nproc-", dir="/tmp"))  # pytest's tmp is root's 0700
    request_cleanup = lambda: shutil.rmtree(w, ignore_errors=True)  # noqa: E731
    (w / "exp").mkdir(parents=True)
    (w / "home").mkdir()
    (w / "exp" / "main.py").write_text('print("value: 1")\n')
    shutil.chown(w, 65534, 65534)
    for p in w.rglob("*"):
        shutil.chown(p, 65534, 65534)
    os.chmod(w, 0o755)
    script = (f"ulimit -u 2000 && exec {LABBOX} run --json --python {PYTHON} "
              f"--runs-dir {w}/runs {w}/exp")
    p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                        "/bin/bash", "-c", script], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, HOME=str(w / "home"),
                                                      XDG_CACHE_HOME=str(w / "home" / "c"),
                                                      XDG_STATE_HOME=str(w / "home" / "s")))
    request_cleanup()
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:], p.stdout[-2000:])
    d = json.loads(p.stdout)
    assert d["status"] == "completed" and d["metrics"]["values"]["value"] == 1
    iso = d["isolation"]
    if (iso.get("pids_enforced_by") or "").startswith("rlimit"):
        assert iso["pids_limit"] == 2000, iso


def test_thread_bomb_stops_at_the_default_process_limit(tmp_path):
    """Without --pids-limit a run still has a process limit (max(4096, 2 * ncpu^2), at most
    pid_max/4, and never above labbox's own RLIMIT_NPROC where that enforces it): a thread
    started per step and never joined stops there, not at the host's last pid. result.json
    says the limit and what enforced it (the pids cgroup, else RLIMIT_NPROC in the run's user
    namespace), and the failure names the process limit with a larger --pids-limit."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    ncpu = os.sysconf("SC_NPROCESSORS_CONF")
    limit = max(64, min(max(4096, 2 * ncpu * ncpu), pid_max // 4))
    if not host_can_enforce("pids"):
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, soft)
    exp = write_exp(tmp_path, """
        import threading
        ev = threading.Event()
        n = 0
        try:
            for i in range(%d):
                threading.Thread(target=ev.wait, daemon=True).start()
                n += 1
        finally:
            print("threads: %%d" %% n, flush=True)
    """ % (limit + 1000))
    r = run_exp(exp, tmp_path / "runs")
    iso = r.result["isolation"]
    assert iso["pids_limit"] == limit, r.why()
    want = "cgroup" if host_can_enforce("pids") else "rlimit_nproc"
    assert iso["pids_enforced_by"].startswith(want) and "default" in iso["pids_enforced_by"], r.why()
    assert r.rc == 1 and r.result["status"] == "failed", r.why()
    assert 0 < r.result["metrics"]["values"]["threads"] < limit, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction" and "can't start new thread" in f["summary"], r.why()
    assert "process or thread limit" in f["suggestion"], r.why()
    assert f["escalation"]["grants"] == "processes", r.why()
    assert int(f["escalation"]["flag"].split()[1]) > limit, r.why()


def test_explicit_pids_limit_is_recorded_and_escalated_past(tmp_path):
    """--pids-limit N is the run's limit in result.json, and the flag suggested when the
    code hit it is a larger one (twice N), not a number it may already have had."""
    exp = write_exp(tmp_path, """
        import threading
        ev = threading.Event()
        for i in range(200):
            threading.Thread(target=ev.wait, daemon=True).start()
    """)
    r = run_exp(exp, tmp_path / "runs", "--pids-limit", "50",
                *([] if host_can_enforce("pids") else ["--allow-degraded", "pids"]))
    assert r.result["isolation"]["pids_limit"] == 50, r.why()
    assert "default" not in r.result["isolation"]["pids_enforced_by"], r.why()
    assert r.rc == 1 and r.result["failure"]["escalation"]["flag"] == "--pids-limit 100", r.why()


@pytest.mark.parametrize("limit", [(), ("--memory", "1g")])
def test_every_process_is_born_in_the_runs_cgroup(tmp_path, limit):
    """The run's cgroup holds the experiment and its children from their first instruction
    (what the limits and the peak memory count), and is removed after the run. Inside, the
    tree has a cgroup namespace of its own (it sees "/"); the host sees where it really is."""
    marker = unique("cgrp")
    exp = write_exp(tmp_path, """
        import subprocess, sys, time
        with open("cgroups.txt", "w") as f:
            f.write(open("/proc/self/cgroup").read())
            child = subprocess.Popen([sys.executable, "-c",
                                      "import time; print(open('/proc/self/cgroup').read(), end='', flush=True); time.sleep(3)",
                                      sys.argv[1]], stdout=subprocess.PIPE, text=True)
            f.write(child.stdout.readline() and child.stdout.read() or "")
        time.sleep(3)
    """, files={"labbox.yaml": "metrics: none\n"})
    seen = {}

    def watch():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(seen) < 2:
            for pid in pids_with_marker(marker):
                try:
                    # the experiment and its child, not labbox and init (which carry the
                    # marker in their arguments too)
                    argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                    if b"python" in argv0:
                        seen[pid] = Path(f"/proc/{pid}/cgroup").read_text()
                except OSError:
                    pass
            time.sleep(0.05)
    t = threading.Thread(target=watch)
    t.start()
    r = run_exp(exp, tmp_path / "runs", *limit, *HOSTILE, args=(marker,))
    t.join()
    if r.rc == 125 and not host_can_enforce("memory"):
        pytest.skip("host has no writable memory cgroup; labbox refused --memory (125)")
    assert r.rc == 0, r.why()
    if r.result["resources"]["peak_rss_source"] != "cgroup":
        assert not host_can_enforce("memory"), "a writable memory cgroup was not used"
        pytest.skip("host has no writable memory cgroup for this user")
    inside = (r.exp / "cgroups.txt").read_text().splitlines()
    assert inside and all(l.split(":", 2)[2] == "/" for l in inside), inside
    # From the host: the experiment and its child, in one cgroup of labbox's.
    mems = []
    for text in seen.values():
        lines = text.splitlines()
        mem = [l.split(":", 2)[2] for l in lines if l.split(":")[1] == "memory"] or \
            [l.split(":", 2)[2] for l in lines if l.split(":")[1] == ""]
        mems += mem
    assert len(mems) == 2 and mems[0] == mems[1] and "/labbox-" in mems[0], seen
    v1 = Path("/sys/fs/cgroup/memory") / mems[0].lstrip("/")
    v2 = Path("/sys/fs/cgroup") / mems[0].lstrip("/")
    assert not v1.exists() and not v2.exists(), "the run's cgroup was left behind"


def test_interrupt_labbox_records_interrupted(tmp_path):
    marker = unique("intr")
    exp = write_exp(tmp_path, f"""
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"])
        print("EXP-STARTED", flush=True)
        time.sleep(300)
    """)
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--python", PYTHON, "--runs-dir", str(runs), *HOSTILE, str(exp)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = wait_for(lambda: any("EXP-STARTED" in (d / "run.log").read_text()
                                       for d in run_dirs(runs) if (d / "run.log").exists())
                           and pids_with_marker(marker), 60)
        assert started, "experiment never started"
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=60)
        left = wait_no_marker(marker, 0.5)
        assert not left, "processes survived an interrupted run:\n" + describe_pids(left)
        (rd,) = run_dirs(runs)
        res = json.loads((rd / "result.json").read_text())
        assert res["status"] == "interrupted", res
        assert rc != 0
    finally:
        p.kill()
        p.wait()
        kill_marker(marker)


def _interrupt_run(tmp_path, code, sig, *flags):
    """Runs CODE, signals labbox's process group with SIG (Ctrl-C at a terminal signals the
    whole foreground group) once it printed EXP-STARTED; returns (exit status, result, log)."""
    exp = write_exp(tmp_path, code)
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--python", PYTHON, "--runs-dir", str(runs), *flags,
                          str(exp)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        assert wait_for(lambda: any("EXP-STARTED" in (d / "run.log").read_text()
                                    for d in run_dirs(runs) if (d / "run.log").exists()), 60)
        os.killpg(p.pid, sig)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    (rd,) = run_dirs(runs)
    return rc, json.loads((rd / "result.json").read_text()), (rd / "run.log").read_text()


def test_ctrl_c_reaches_the_experiment_as_keyboard_interrupt(tmp_path):
    """Ctrl-C on labbox raises KeyboardInterrupt in the experiment: its own handler saves
    what it has, and labbox collects it (the run is still recorded as interrupted)."""
    rc, res, log = _interrupt_run(tmp_path, """
        import json, time
        results = {"epoch": 0, "val_acc": 0.5}
        try:
            for epoch in range(1, 1000):
                time.sleep(0.2)
                results = {"epoch": epoch, "val_acc": 0.6}
                print("EXP-STARTED", flush=True)
        except KeyboardInterrupt:
            print("saving partial results", flush=True)
            with open("results.json", "w") as f:
                json.dump(results, f)
            print(f"best_val_acc: {results['val_acc']}", flush=True)
    """, signal.SIGINT)
    assert rc == 130, (rc, res)
    assert res["status"] == "interrupted" and res["interrupted_in"] == "run", res
    assert "saving partial results" in log, log
    assert res["metrics"]["values"]["best_val_acc"] == 0.6, res["metrics"]
    assert res["metrics"]["files"]["results.json"]["val_acc"] == 0.6, res["metrics"]


def test_ctrl_c_ignored_by_the_experiment_is_followed_by_sigterm(tmp_path):
    """An experiment that ignores Ctrl-C gets SIGTERM after --grace, as before; SIGTERM to
    labbox reaches it as SIGTERM (no KeyboardInterrupt)."""
    code = """
        import signal, sys, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        def on_term(*_):
            print("GOT-SIGTERM", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, on_term)
        print("EXP-STARTED", flush=True)
        time.sleep(300)
    """
    t0 = time.monotonic()
    rc, res, log = _interrupt_run(tmp_path / "int", code, signal.SIGINT, "--grace", "1")
    assert rc == 130 and res["status"] == "interrupted", (rc, res)
    assert "GOT-SIGTERM" in log, log
    assert time.monotonic() - t0 < 30
    rc, res, log = _interrupt_run(tmp_path / "term", code.replace(
        "signal.SIG_IGN", "lambda *_: print('GOT-SIGINT', flush=True)"), signal.SIGTERM)
    assert rc == 143 and res["status"] == "interrupted", (rc, res)
    assert "GOT-SIGTERM" in log and "GOT-SIGINT" not in log, log


def test_cpus_limit(tmp_path):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs at least 2 CPUs to tell a limit of 1 from none")
    exp = write_exp(tmp_path, """
        import os, resource, time
        kids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                end = time.time() + 3
                while time.time() < end:
                    pass
                os._exit(0)
            kids.append(pid)
        t0 = time.time()
        for pid in kids:
            os.waitpid(pid, 0)
        wall = time.time() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        print("cpu_per_wall: %.3f" % ((ru.ru_utime + ru.ru_stime) / wall))
    """)
    r = run_exp(exp, tmp_path / "runs", "--cpus", "1", *HOSTILE)
    if r.rc == 125 and not host_can_enforce("cpu"):
        pytest.skip("host has no writable cpu cgroup; labbox refused --cpus (125)")
    assert r.rc == 0, r.why()
    # 4 busy processes get about 1 CPU between them, not one each
    assert r.result["metrics"]["values"]["cpu_per_wall"] < 1.5, r.result["metrics"]


def test_run_dir_under_a_private_directory(tmp_path):
    """As root the experiment runs as uid 65534. Run directories under a directory only root
    may enter (mode 0700, outside /tmp and the homes) must still work: labbox covers that
    directory inside the sandbox and makes the path to exp/ reachable, hiding the rest."""
    if os.getuid() != 0:
        pytest.skip("the payload has the caller's uid when labbox is not root")
    import tempfile
    private = tempfile.mkdtemp(prefix="labbox-private-", dir="/var/lib")
    try:
        os.chmod(private, 0o700)
        with open(os.path.join(private, "secret.txt"), "w") as f:
            f.write("secret")
        exp = write_exp(tmp_path, """
            import os
            d = os.path.dirname(os.path.dirname(os.path.dirname(os.getcwd())))
            print("listing: %s" % ",".join(sorted(os.listdir(d))))
            print("acc: 1")
        """)
        r = run_exp(exp, os.path.join(private, "runs"), cwd=private)
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"]["acc"] == 1
        assert r.result["metrics"]["values"]["listing"] == "runs", r.why()
    finally:
        shutil.rmtree(private, ignore_errors=True)


def test_a_cache_under_home_is_written_to_the_sandboxs_home(tmp_path):
    # Research code keeps caches under `~` (torch.hub's, Hugging Face's): in the sandbox HOME
    # is its private writable /tmp, and the check must agree with the run, however the home
    # is spelled, and never suggest a `-v` flag that labbox itself refuses.
    exp = write_exp(tmp_path, '''
        import json, os
        from pathlib import Path
        cache = os.path.join(os.path.expanduser("~"), ".cache", "myexp")
        os.makedirs(cache, exist_ok=True)
        with open(os.path.join(cache, "c.json"), "w") as f:
            json.dump({"n": 1}, f)
        other = os.path.join(os.environ["HOME"], ".cache", "b")
        os.makedirs(other, exist_ok=True)
        with open(os.path.join(other, "c.json"), "w") as f:
            json.dump({"n": 2}, f)
        (Path.home() / "p.txt").write_text("x")
        print("cached:", len(os.listdir(os.path.join(os.path.expanduser("~"), ".cache"))))
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"]["cached"] == 2
    assert not [n for n in r.result.get("needs") or [] if "~" in (n.get("flag") or "")]


def test_git_dirty_is_the_work_tree_not_the_index_flags_or_config(tmp_path):
    """`dirty` says whether the code run is the commit recorded: an edit the index is told to
    look away from (assume-unchanged, skip-worktree) and an untracked file a repository's
    config hides from status (status.showUntrackedFiles=no) are changes all the same."""
    def g(repo, *a):
        subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)

    for variant in ("assume-unchanged", "skip-worktree", "untracked-hidden"):
        repo = tmp_path / variant
        exp = write_exp(repo, "from config import lr\nprint(f'accuracy: {lr}')\n",
                        files={"config.py": "lr = 0.1\n"})
        commit_all(repo)
        if variant == "untracked-hidden":
            g(repo, "config", "status.showUntrackedFiles", "no")
            (exp / "helper.py").write_text("x = 1\n")
        else:
            (exp / "config.py").write_text("lr = 0.4\n")
            g(repo, "update-index", f"--{variant}", str(exp / "config.py"))
        r = run_exp(exp, tmp_path / f"runs-{variant}")
        assert r.rc == 0, r.why()
        man = r.file_json("manifest.json")
        assert man["git"]["dirty"] is True, (variant, man["git"])
        if variant != "untracked-hidden":
            assert "+lr = 0.4" in man["git_diff"]["diff"], (variant, man["git_diff"])
        # the repository's own index is left as it was
        flags = subprocess.run(["git", "-C", str(repo), "ls-files", "-v"], capture_output=True,
                               text=True).stdout
        if variant == "assume-unchanged":
            assert re.search(r"^h .*config\.py$", flags, re.M), flags


def test_labboxs_own_records_in_the_repository_are_no_change(tmp_path):
    """Run from inside a clean checkout, labbox's records (.labbox beside the runs) are not
    the experiment's change: the run is the commit, not dirty; a new file of the
    experiment's is."""
    exp = write_exp(tmp_path / "repo", "print('accuracy: 0.5')\n")
    commit_all(exp)
    dirty = []
    for step in ("first", "second", "new file"):
        if step == "new file":
            (exp / "helper.py").write_text("x = 1\n")
        p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "."], cwd=exp,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        man = json.loads((Path(json.loads(p.stdout)["run_dir"]) / "manifest.json").read_text())
        dirty.append(man["git"]["dirty"])
    assert dirty == [False, False, True], dirty


def test_json_is_one_line_into_a_pipe_and_indented_at_a_terminal(tmp_path):
    """A program reading --json pays for every byte (indentation was a fifth of a large
    check's document); a person at a terminal reads it indented. The same document both
    ways, and check's kept answer is kept apart for each."""
    import pty
    exp = write_exp(tmp_path, 'print("accuracy: 0.5")\n')
    for args in (["check", "--json", str(exp)], ["run", "--json", "--python", PYTHON,
                                                 "--runs-dir", str(tmp_path / "runs"), str(exp)]):
        p = labbox(*args)
        assert p.returncode == 0, p.stderr
        assert p.stdout.count("\n") == 1, p.stdout[:500]
        piped = json.loads(p.stdout)
        master, slave = pty.openpty()
        proc = subprocess.Popen([LABBOX, *args], stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=subprocess.DEVNULL)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        os.close(master)
        assert proc.wait(timeout=300) == 0
        text = got.decode().replace("\r\n", "\n")
        assert text.count("\n") > 5, text[:500]
        shown = json.loads(text)
        if args[0] == "check":
            for k in ("findings", "counts", "needs", "rejected"):
                assert shown[k] == piped[k], k
        else:
            assert shown["status"] == piped["status"] == "completed"
    # the kept answer for a pipe is still one line
    p = labbox("check", "--json", str(exp))
    assert p.stdout.count("\n") == 1 and json.loads(p.stdout)["cached_files"] == 1, p.stdout[:300]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs as the runs directory")
def test_a_runs_directory_that_fills_up_says_the_log_was_cut_and_why(tmp_path):
    """The experiment's output fills the runs directory's file system: what run.log could not
    keep is said (truncated, and how far it got), the verdict names run.log, the first
    record that could not be written, and the metrics read from the stream are kept."""
    runs = tmp_path / "runs"
    runs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(runs)], check=True)
    try:
        exp = write_exp(tmp_path, 'import sys\nfor i in range(20000):\n'
                                  '    print("line", i, "y" * 500)\nprint("accuracy: 0.9")\n')
        p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
        doc = json.loads(p.stdout)
        assert p.returncode == 125 and doc["status"] == "infra_error", doc
        assert doc["log"]["truncated"] is True and "No space left" in doc["log"]["error"], doc["log"]
        assert doc["log"]["bytes_kept"] < doc["log"]["bytes"]
        assert "run.log" in doc["failure"]["summary"], doc["failure"]
        assert doc["metrics"]["values"]["accuracy"] == 0.9
    finally:
        subprocess.run(["umount", "-l", str(runs)])
