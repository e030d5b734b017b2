"""A Ctrl-C or SIGTERM before the experiment starts (staging, the static check's compile in a
helper sandbox of labbox's own) ends labbox as interrupted, 128+N, with the run recorded as
interrupted at that step and nothing started; a mistake in labbox.yaml's check: block is a
configuration error for `run` as for `check` (docs/decisions.md, twenty-seventh session)."""
import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from conftest import LABBOX, PYTHON, user_dirs

PRE_RUN_STEPS = {"start", "stage", "environment", "check", "runtime_gate"}


def slow_check_exp(tmp_path, marker):
    """An experiment whose check compiles many new files (a fresh cache, unique content), so
    that the check lasts long enough to be signalled in; its entry writes marker at once."""
    exp = tmp_path / "exp"
    exp.mkdir()
    tag = uuid.uuid4().hex
    for i in range(400):
        (exp / f"mod_{i}.py").write_text(
            f"# {tag}\n" + "".join(f"def f_{i}_{j}(x):\n    return x + {j}\n" for j in range(40)))
    (exp / "main.py").write_text(
        f"open({str(marker)!r}, 'w').write('started')\n"
        "print('accuracy: 0.9', flush=True)\n")
    return exp


def start(exp, runs, cache):
    env = user_dirs(cache)
    return subprocess.Popen([LABBOX, "run", "--json", "-q", "--runs-dir", str(runs),
                             "--python", PYTHON, "--budget", "60", str(exp)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay", [0.0, 0.02, 0.08])
def test_signal_before_the_experiment_starts_is_an_interruption(tmp_path, sig, delay):
    # The marker is written by the experiment on the host side of a writable path only if it
    # ran; a path outside the sandbox's view cannot be written, so exp/ is where it lands.
    runs = tmp_path / "runs"
    exp = slow_check_exp(tmp_path, "STARTED")
    p = start(exp, runs, tmp_path / "cache")
    try:
        # The run directory exists from just before staging: signalled from then on, the
        # step is staging, the environment's record or the check (400 new files to compile).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (runs.exists() and any(
                d.is_dir() and not d.name.startswith(".") for d in runs.iterdir())):
            time.sleep(0.001)
        time.sleep(delay)
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + sig, (p.returncode, err.decode()[-2000:])
    doc = json.loads(out)
    assert doc["status"] == "interrupted", doc
    assert doc["labbox_exit_code"] == 128 + sig
    assert doc["interrupted_in"] in PRE_RUN_STEPS, doc["interrupted_in"]
    assert not (doc.get("check") or {}).get("rejected"), doc.get("check")
    rd = next(d for d in runs.iterdir() if d.is_dir() and not d.name.startswith("."))
    res = json.loads((rd / "result.json").read_text())
    assert res["status"] == "interrupted"
    assert res["failure"]["class"] == "interrupted"
    assert "before the experiment started" in res["failure"]["summary"]
    assert "the experiment was not started" in (rd / "run.log").read_text()
    assert not (rd / "exp" / "STARTED").exists(), "the experiment ran after the signal"


def test_signal_after_the_run_directory_appears_never_runs_it_whatever_the_moment(tmp_path):
    """Many moments, one experiment each: whatever step a signal lands in, the verdict is
    interrupted, and the experiment ran only when the record says it was already running."""
    seen = set()
    for i, delay in enumerate([0.0, 0.005, 0.01, 0.03, 0.06, 0.12, 0.25]):
        base = tmp_path / str(i)
        base.mkdir()
        runs = base / "runs"
        exp = slow_check_exp(base, "STARTED")
        p = start(exp, runs, base / "cache")
        try:
            while not (runs.exists() and any(d.is_dir() and not d.name.startswith(".")
                                             for d in runs.iterdir())):
                assert p.poll() is None, p.communicate()
                time.sleep(0.001)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 130, (delay, p.returncode, err.decode()[-2000:])
        doc = json.loads(out)
        assert doc["status"] == "interrupted", doc
        seen.add(doc["interrupted_in"])
        rd = next(d for d in runs.iterdir() if d.is_dir() and not d.name.startswith("."))
        if doc["interrupted_in"] != "run":
            assert not (rd / "exp" / "STARTED").exists(), (delay, doc["interrupted_in"])
    assert seen & PRE_RUN_STEPS, seen


def config_error_exp(tmp_path):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 0.9')\n")
    (exp / "labbox.yaml").write_text("check:\n  polcy: strict\n")
    return exp


def test_check_block_error_is_a_configuration_error_for_run(tmp_path):
    exp = config_error_exp(tmp_path)
    runs = tmp_path / "runs"
    r = subprocess.run([LABBOX, "run", "--runs-dir", str(runs), "--python", PYTHON, str(exp)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "polcy" in r.stderr and "check" in r.stderr, r.stderr
    assert not runs.exists() or not any(d for d in runs.iterdir() if not d.name.startswith("."))


def test_check_block_error_is_a_configuration_error_for_run_json(tmp_path):
    exp = config_error_exp(tmp_path)
    r = subprocess.run([LABBOX, "run", "--json", "--runs-dir", str(tmp_path / "runs"),
                        "--python", PYTHON, str(exp)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "labbox.error/1", doc
    assert doc["status"] == "usage_error" and doc["exit_code"] == 2
    assert "unknown key 'polcy' under 'check'" in doc["error"]["message"]
    c = subprocess.run([LABBOX, "check", "--json", str(exp)], capture_output=True, text=True,
                       timeout=120)
    assert c.returncode == 2
    assert json.loads(c.stdout)["error"]["message"] == doc["error"]["message"]
