"""The Python client (python/labbox/) against the real binary (LABBOX_BIN): typed results,
errors as exceptions carrying labbox's documents, and the AutoResearchClaw-shaped adapter."""
import json
import math
import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import (LABBOX, PYTHON, REPO, host_can_enforce, kill_marker, pids_with_marker, unique,
                      wait_no_marker, write_exp)

sys.path.insert(0, str(REPO / "python"))
import labbox  # noqa: E402  (importable straight from the tree)
from labbox.sandbox import LabboxSandbox, SandboxResult  # noqa: E402


@pytest.fixture(autouse=True)
def _bin(monkeypatch, tmp_path):
    monkeypatch.setenv("LABBOX_BIN", LABBOX)
    monkeypatch.chdir(tmp_path)


def test_run_returns_a_typed_result(tmp_path):
    exp = write_exp(tmp_path, """
        print("condition: a")
        print("loss: 0.5")
        print("accuracy: 0.9")
        """, yaml="metrics: [accuracy]\n")
    r = labbox.run(exp, budget=60, memory=None, network="none", python=PYTHON)
    assert isinstance(r, labbox.RunResult)
    assert r.status == "completed" and r.ok and r.exit_code == 0
    assert r.metrics.conditions["a"] == {"loss": 0.5, "accuracy": 0.9}
    assert r.metrics.flat() == {"a/loss": 0.5, "a/accuracy": 0.9}
    assert r.budget_s == 60 and r.resources.wall_s is not None
    assert r.doc["schema"] == "labbox.run/1" and r.doc["id"] == r.id
    assert "accuracy: 0.9" in r.log()
    assert r.raise_for_status() is r
    assert [x["id"] for x in labbox.runs(limit=1)] == [r.id]


def test_a_failed_run_is_a_result_and_raises_on_request(tmp_path):
    exp = write_exp(tmp_path, "print('accuracy: 0.1')\nraise RuntimeError('bad shape')\n")
    r = labbox.run(exp, python=PYTHON, budget=60)
    assert r.status == "failed" and r.exit_code == 1
    assert r.failure.class_ == "code_error" and "bad shape" in r.failure.summary
    assert r.metrics["accuracy"] == 0.1
    with pytest.raises(labbox.RunFailed) as e:
        labbox.run(exp, python=PYTHON, budget=60, check=True)
    assert e.value.result.failure.class_ == "code_error"
    assert e.value.exit_code == 1 and e.value.doc["status"] == "failed"
    ex = labbox.explain(r.id)
    assert ex.failure.class_ == "code_error" and ex.status == "failed"
    assert "code_error" in str(ex)
    # raised on the experiment's own line 2: certain, and named apart
    assert ex.failure.confidence == "high" and ex.failure.escalation is None
    assert ex.failure.code_location["file"] == "main.py"
    assert ex.failure.code_location["line"] == 2
    assert ex.needs == [] and ex.diagnosis_source == "result.json"


def test_start_and_cancel_as_ctrl_c(tmp_path):
    marker = unique("pycancel")
    exp = write_exp(tmp_path, "import sys, time\nprint('up', flush=True)\ntime.sleep(600)\n",
                    yaml="metrics: none\n")
    try:
        with labbox.start(exp, python=PYTHON, args=[marker]) as h:
            deadline = time.monotonic() + 120
            # The experiment itself (labbox carries the marker too, after --).
            while not [p for p in pids_with_marker(marker)
                       if open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")[0]
                       != LABBOX.encode()]:
                assert time.monotonic() < deadline and not h.poll(), "never started"
                time.sleep(0.1)
            h.cancel()
            r = h.wait()
        assert r.status == "interrupted" and r.failure.class_ == "interrupted"
        assert wait_no_marker(marker, 60) == []
    finally:
        kill_marker(marker)


def test_nan_metrics_are_read_as_floats(tmp_path):
    exp = write_exp(tmp_path, "print('loss: nan')\n", yaml="metrics: [loss]\n")
    r = labbox.run(exp, python=PYTHON, budget=60)
    assert r.status == "invalid_metrics" and r.labbox_exit_code == 4
    assert math.isnan(r.metrics["loss"]) and r.metric_issues


def test_usage_errors_raise_with_the_error_document(tmp_path):
    with pytest.raises(labbox.LabboxError) as e:
        labbox.run(tmp_path / "missing", python=PYTHON)
    assert e.value.exit_code == 2 and e.value.status == "usage_error"
    assert e.value.doc["schema"] == "labbox.error/1" and "missing" in e.value.message
    with pytest.raises(labbox.LabboxError):
        labbox.explain("no-such-run")


def test_environment_escalate_and_gate_reach_the_run(tmp_path):
    exp = write_exp(tmp_path, """
        import numpy
        print("mean:", float(numpy.mean([1, 3])))
        """)
    r = labbox.run(exp, environment="auto", runtime_gate="record")
    assert r.ok, r.doc
    assert r.environment["asked"] == "auto" and r.environment["chosen"]["python"]
    assert r.doc["runtime_gate"]["mode"] == "record"
    assert r.metrics.values["mean"] == 2.0

    hog = write_exp(tmp_path / "hog", """
        block = bytearray(160 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        print("touched_mb:", len(block) >> 20)
        """)
    degraded = None if host_can_enforce("memory") else "memory"
    r = labbox.run(hog, memory="120m", allow_degraded=degraded, escalate="memory",
                   python=PYTHON)
    assert r.ok, r.doc
    assert [a["flags"]["memory_bytes"] for a in r.attempts] == [120 << 20, 240 << 20]
    assert r.attempts[1]["escalated"] == ["memory"]
    with pytest.raises(ValueError, match="environment"):
        labbox.run(exp, environment="A=B")


def test_repair_cmd_reaches_the_run(tmp_path):
    exp = write_exp(tmp_path, "print('accuracy:', 1 / 0)\n")
    fix = "sed -i 's|1 / 0|0.5|' main.py"
    r = labbox.run(exp, repair_cmd=fix, max_repairs=1, python=PYTHON)
    assert r.ok, r.doc
    assert len(r.attempts) == 2 and r.metrics.values["accuracy"] == 0.5
    assert "1 / 0" in (exp / "main.py").read_text()  # without apply=True it is not changed
    r = labbox.run(exp, repair_cmd=fix, max_repairs=1, apply=True, python=PYTHON)
    assert r.ok and "1 / 0" not in (exp / "main.py").read_text()


def test_check_and_probe(tmp_path):
    ok = write_exp(tmp_path, "print('accuracy: 1')\n", name="ok")
    bad = write_exp(tmp_path, "import subprocess\nsubprocess.run(['ls'])\n", name="bad")
    c = labbox.check(ok)
    assert isinstance(c, labbox.CheckResult) and c.rejected is False
    c = labbox.check(bad)
    assert c.rejected is True and any(f.rejects for f in c.findings)
    p = labbox.probe()
    assert isinstance(p, labbox.ProbeResult) and p.doc["schema"] == "labbox.probe/1"
    assert "pid" in p.namespaces


def test_schema_version_is_checked():
    with pytest.raises(labbox.SchemaError):
        labbox.RunResult.from_doc({"schema": "labbox.run/2", "id": "x"})
    with pytest.raises(labbox.LabboxError):
        labbox.RunResult.from_doc({"schema": "labbox.error/1", "error": {"message": "m"}})


def test_labbox_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("LABBOX_BIN", str(tmp_path / "nothing"))
    with pytest.raises(labbox.LabboxNotFound):
        labbox.probe()


def test_sandbox_adapter_runs_code_and_projects(tmp_path):
    sb = LabboxSandbox(workdir=tmp_path / "work", python=PYTHON)
    res = sb.run("print('accuracy: 0.75')\n", timeout_sec=60)
    assert isinstance(res, SandboxResult)
    assert res.returncode == 0 and res.timed_out is False
    assert res.metrics == {"accuracy": 0.75}
    assert "accuracy: 0.75" in res.stdout and res.stderr == ""
    assert res.elapsed_sec >= 0

    res = sb.run("import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)\n", timeout_sec=60)
    assert res.returncode == 3 and "oops" in res.stdout and "failed" in res.stderr

    proj = write_exp(tmp_path, """
        import os, sys
        print("lr:", sys.argv[1])
        print("seed:", os.environ["SEED"])
        """, name="proj", files={"train.py": textwrap.dedent("""
        import os, sys
        print("lr:", sys.argv[1])
        print("seed:", os.environ["SEED"])
        """)})
    res = sb.run_project(proj, entry_point="train.py", timeout_sec=60, args=["0.5"],
                         env_overrides={"SEED": "7"})
    assert res.returncode == 0, res.stderr
    assert res.metrics == {"lr": 0.5, "seed": 7}
    # Recorded under the workdir.
    assert (tmp_path / "work" / ".labbox" / "runs" / res.run_id / "result.json").exists()


def test_sandbox_adapter_times_out(tmp_path):
    sb = LabboxSandbox(workdir=tmp_path / "work", python=PYTHON)
    res = sb.run("import time\nprint('start', flush=True)\ntime.sleep(60)\n", timeout_sec=1)
    assert res.timed_out is True and res.returncode != 0
    assert res.status == "timeout" and "start" in res.stdout


def test_sandbox_adapter_reports_refusals_as_results(tmp_path):
    sb = LabboxSandbox(workdir=tmp_path / "work", python=PYTHON, network="nonsense")
    res = sb.run("print(1)\n", timeout_sec=10)
    assert res.returncode == 2 and "network" in res.stderr


def test_pip_install(tmp_path):
    """`pip install ./python` works offline (no dependencies); done on a copy, so the build's
    leftovers stay out of the tree."""
    import shutil
    if subprocess.run([PYTHON, "-c", "import setuptools, wheel, importlib.util; "
                       "assert importlib.util.find_spec('pip')"],
                      capture_output=True).returncode != 0:
        pytest.skip("pip, setuptools or wheel is missing for /usr/bin/python3")
    src = tmp_path / "src"
    shutil.copytree(REPO / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                        "__pycache__"))
    p = subprocess.run([PYTHON, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(tmp_path / "site"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"), LABBOX_BIN=LABBOX)
    p = subprocess.run([PYTHON, "-c", "import labbox, labbox.sandbox; print(labbox.__file__); "
                        "print(labbox.probe().doc['schema'])"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert str(tmp_path / "site") in p.stdout and "labbox.probe/1" in p.stdout


def test_example_pipeline_runs(tmp_path):
    env = dict(os.environ, LABBOX_BIN=LABBOX)
    p = subprocess.run([PYTHON, str(REPO / "examples" / "autoresearchclaw" / "pipeline.py")],
                       capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "experiment: returncode=0" in p.stdout and "broken: returncode=1" in p.stdout
    assert "missing_package" in p.stdout
