"""The runtime gate's events channel, attacked from inside: the experiment holds a descriptor
to it (os.write raises no audit event) and sees its path. What the host checks: the channel
costs the host's disk nothing however much is written to it, and a refusal the gate recorded
stays in result.json's runtime_gate whatever the experiment does to the channel afterwards."""
import json
import os
import subprocess

import pytest

from escape_lib import CALL_TIMEOUT, LABBOX, PYTHON, LiveRun, MiB, free_bytes, run_dirs, stage


@pytest.mark.host_wide
def test_the_events_channel_cannot_fill_the_disk_or_lose_a_refusal(tmp_path):
    free = free_bytes(str(tmp_path))
    bound = min(512 * MiB, free // 8)
    exp = stage(tmp_path, "gate_channel", {"bound": bound})
    lr = LiveRun(exp, tmp_path / "runs", "--runtime-gate", "on", disk=str(tmp_path))
    r = lr.wait(timeout=300)
    att = json.loads((r.exp / "report.json").read_text())
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    written = int(r.result["metrics"]["values"]["written_mb"]) * MiB
    assert written >= min(bound, 64 * MiB), att  # the flood got through to the channel
    assert lr.min_free >= free - 64 * MiB, (
        f"the experiment wrote {written >> 20} MiB into the gate's events channel and the host's "
        f"disk lost {(free - lr.min_free) >> 20} MiB: the channel is a file on the host's disk "
        f"that no limit bounds")
    g = r.result["runtime_gate"]
    hit = [e for e in g["events"] if e["event"] == "os.system" and e["rule"] == "LB101"]
    assert hit and hit[0]["refused"] is True, (
        f"the gate refused os.system, but runtime_gate does not say so after the experiment "
        f"attacked the channel ({att}): {json.dumps(g)[:1500]}")
    assert g["refused"] >= 1
    # the flood is not silently absorbed: every byte was read, and the record says that the
    # experiment wrote into the channel
    assert g["channel"] == "tampered" and g["malformed"] >= 1, json.dumps(g)[:1500]
    assert "wrote into the gate's channel" in g["note"], g["note"]
    assert not (run_dirs(tmp_path / "runs")[0] / "gate").exists()


def test_the_gate_adds_nothing_to_the_output_of_an_interpreter_without_a_sitecustomize(tmp_path):
    """The gate shadows the interpreter's own sitecustomize and imports it after itself. An
    interpreter that has none (pyenv's, a python.org build; here Debian's hidden by a volume)
    must start as it would without the gate: nothing on stderr, so run.log and the failure
    evidence drawn from it are the experiment's own."""
    import os
    import subprocess
    from escape_lib import PYTHON, run_exp
    real = subprocess.run([PYTHON, "-S", "-c", "import sysconfig,os;p=os.path.join("
                           "sysconfig.get_path('stdlib'),'sitecustomize.py');"
                           "print(os.path.realpath(p) if os.path.exists(p) else '')"],
                          capture_output=True, text=True, check=True).stdout.strip()
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("import sys\nprint('acc: 1')\nprint('clean', file=sys.stderr)\n")
    opts = ["--runtime-gate", "on"]
    if real:
        empty = tmp_path / "empty"
        empty.mkdir()
        opts += ["-v", f"{empty}:{os.path.dirname(real)}:ro"]
    r = run_exp(exp, tmp_path / "runs", *opts)
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    log = (run_dirs(tmp_path / "runs")[0] / "run.log").read_text(errors="replace")
    assert "sitecustomize" not in log and "Error" not in log, log[:2000]
    assert r.result["runtime_gate"]["installed"] is True


def _gated_run(tmp_path, exp, *extra):
    import time
    from escape_lib import POLICY, Run, e2e
    runs = tmp_path / f"runs{len(extra)}"
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "--env", "auto",
                      *extra, "--runs-dir", str(runs), str(exp))
    return Run(proc, runs, time.monotonic() - t0)


def test_code_that_runs_before_the_gate_stops_the_run_unless_accepted(tmp_path):
    """A venv inside the experiment (which --env auto picks) has .pth files, and site runs
    their `import` lines before it imports the gate's sitecustomize: such a line can keep the
    gate out of the interpreter altogether. A gate that is to refuse and cannot be sure to be
    there is said and the run stopped (125, naming the file and the flag), with nothing of the
    experiment run; with --allow-degraded gate it runs, and result.json does not claim that the
    gate held and names the file whose code ran before it. What the gate would have refused
    in the process then passes (eval), but the sandbox's exec guard does not depend on the
    gate being in: the shell os.system starts is killed, and the run fails naming it."""
    import subprocess
    from escape_lib import PYTHON
    exp = tmp_path / "exp"
    exp.mkdir()
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(exp / ".venv")], check=True)
    site = next((exp / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "zz_early.pth").write_text(
        "import sys; sys.path[:] = [p for p in sys.path if 'labbox-gate' not in p]\n")
    (exp / "main.py").write_text(
        "import os, sys\n"
        "try:\n"
        "    eval('1')\n"
        "    print('gate_out: 1')\n"
        "except PermissionError:\n"
        "    print('gate_out: 0')\n"
        "rc = os.system('true')\n"
        "print('system_ran:', int(rc == 0))\n")
    r = _gated_run(tmp_path, exp)
    assert r.rc == 125, r.why()
    why = r.result["failure"]["summary"]
    assert r.result["status"] == "infra_error", r.why()
    assert "zz_early.pth" in why and "--allow-degraded gate" in why, why
    assert "system_ran" not in r.log(), "the experiment ran although its gate was refused"
    assert not r.result["metrics"]["values"], why

    r = _gated_run(tmp_path, exp, "--allow-degraded", "gate")
    g = r.result["runtime_gate"]
    values = r.result["metrics"]["values"]
    assert values.get("gate_out") == 1, (
        "the .pth did not keep the gate out: the test proves nothing" + r.why())
    assert g["enforced"] is False, (
        f"eval ran unrefused (a .pth inside the experiment kept the gate out), yet "
        f"runtime_gate claims it was enforced: {json.dumps(g)[:1500]}")
    assert values.get("system_ran") == 0, r.why()
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    assert [e["event"] for e in g["events"] if e["refused"]] == ["exec"], json.dumps(g)[:1500]
    assert any(p.endswith("site-packages/zz_early.pth") for p in g.get("before_gate", [])), g
    assert "before" in (g["note"] or ""), g


def test_an_interpreter_binary_of_the_experiments_own_stops_the_run_unless_accepted(tmp_path):
    """An environment inside the experiment whose interpreter is a binary of its own (a venv
    made with --copies, or anything that says it is Python) need not import the gate at all:
    the run is stopped (125) unless --allow-degraded gate accepts it, and then result.json
    names it in before_gate and does not claim the gate was enforced."""
    import subprocess
    from escape_lib import PYTHON
    exp = tmp_path / "exp"
    exp.mkdir()
    subprocess.run([PYTHON, "-m", "venv", "--copies", "--without-pip", str(exp / ".venv")],
                   check=True)
    (exp / "main.py").write_text("print('acc: 1')\n")
    r = _gated_run(tmp_path, exp)
    assert r.rc == 125, r.why()
    assert ".venv/bin/python" in r.result["failure"]["summary"], r.why()
    assert "acc: 1" not in r.log()
    r = _gated_run(tmp_path, exp, "--allow-degraded", "gate")
    assert r.rc == 0, r.why()
    g = r.result["runtime_gate"]
    assert g["enforced"] is False, json.dumps(g)[:1500]
    assert [p for p in g["before_gate"] if p.startswith(".venv/bin/python")], g
    assert len(g["before_gate"]) == len(set(g["before_gate"])), g


def test_a_gate_that_only_records_is_not_stopped_by_code_before_it(tmp_path):
    """--runtime-gate record refuses nothing, so nothing is lost when code runs before it: the
    run goes ahead and says what ran before the gate."""
    import subprocess
    import time
    from escape_lib import POLICY, PYTHON, Run, e2e
    exp = tmp_path / "exp"
    exp.mkdir()
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(exp / ".venv")], check=True)
    site = next((exp / ".venv" / "lib").glob("python3*/site-packages"))
    (site / "zz_early.pth").write_text("import os\n")
    (exp / "main.py").write_text("print('acc: 1')\n")
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "record", "--env", "auto",
                      "--runs-dir", str(tmp_path / "runs"), str(exp))
    r = Run(proc, tmp_path / "runs", time.monotonic() - t0)
    assert r.rc == 0, r.why()
    g = r.result["runtime_gate"]
    assert g["mode"] == "record" and g["enforced"] is False, g
    assert any(p.endswith("zz_early.pth") for p in g["before_gate"]), g


def test_a_module_on_the_pythonpath_cannot_run_before_the_gate(tmp_path):
    """PYTHONPATH=. (or src) is what many projects are run with. Its entries come before the
    standard library on sys.path, so a module of the experiment named like one the
    interpreter or the gate imports before the hook is in (`_socket`) ran first, and could
    break the gate (here: an ImportError, "Error in sitecustomize") while result.json claimed
    it enforced; then an unpickled os.system ran a shell. The given PYTHONPATH now joins
    sys.path only once the gate is in, at the place the interpreter gives it; the
    experiment's imports through it work as without the gate."""
    import time
    from escape_lib import POLICY, Run, e2e
    exp = tmp_path / "exp"
    (exp / "src").mkdir(parents=True)
    (exp / "_socket.py").write_text(
        'import sys\nprint("shadow ran before the gate", file=sys.stderr)\n'
        'raise ImportError("no _socket here")\n')
    # what the gate may import itself while it sets up (sysconfig, when the probe could not
    # name the standard library), shadowed the same way
    (exp / "sysconfig.py").write_text('raise ImportError("no sysconfig here")\n')
    (exp / "src" / "helper.py").write_text("LR = 0.5\n")
    (exp / "main.py").write_text(
        "import pickle, sys\n"
        "from helper import LR\n"
        "print('lr:', LR)\n"
        "print('path:', [p.rsplit('/exp', 1)[-1] or '/' for p in sys.path[:3]])\n"
        "pickle.loads(b\"cos\\nsystem\\n(S'echo SHELL-$((6*7))'\\ntR.\")\n"
        "print('accuracy: 1')\n")
    runs = tmp_path / "runs"
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "-e",
                      "PYTHONPATH=.:src", "--runs-dir", str(runs), str(exp))
    r = Run(proc, runs, time.monotonic() - t0)
    log = r.log()
    assert "shadow ran before the gate" not in log and "Error in sitecustomize" not in log, log
    assert "SHELL-42" not in log, "a shell ran under an enforcing gate" + r.why()
    assert r.rc == 1 and r.result["failure"]["class"] == "gate_refused", r.why()
    g = r.result["runtime_gate"]
    assert g["installed"] and g["enforced"], g
    assert [e for e in g["events"] if e["refused"] and e["rule"] == "gate.pickle"], g
    # the given PYTHONPATH is where the interpreter puts it: after the script's directory
    assert "lr: 0.5" in log and "path: ['/', '/', '/src']" in log, log


@pytest.mark.parametrize("var,value", [("PYTHONUSERBASE", "ub"), ("LD_PRELOAD", "./evil.so"),
                                       ("PYTHONHOME", "home")])
def test_the_experiments_sweep_env_cannot_change_what_runs_before_the_gate(tmp_path, var,
                                                                          value):
    """A sweep's env: in labbox.yaml is the experiment's own configuration. PYTHONUSERBASE
    pointing into it made site run a .pth file of the experiment's before the gate, which
    kept the gate out while result.json said it enforced; PYTHONHOME and the loader's LD_
    variables do as much. labbox.yaml may not set them (exit 2, naming the variable and -e),
    and nothing runs; an ordinary variable and PYTHONPATH still can."""
    import subprocess
    from escape_lib import LABBOX
    exp = tmp_path / "exp"
    site = exp / "ub" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "zz_early.pth").write_text(
        "import sys; print('pth ran before the gate', file=sys.stderr); "
        "sys.path[:] = [p for p in sys.path if 'labbox-gate' not in p]\n")
    (exp / "main.py").write_text("import os\nprint('model:', os.environ.get('MODEL'))\n"
                                 "print('accuracy: 1')\n")
    yaml = ("sweep:\n  parameters:\n    lr: [0.1]\n  seeds: [0]\n"
            f"  env: {{MODEL: \"m{{lr}}\", {var}: \"{value}\"}}\n")
    (exp / "labbox.yaml").write_text(yaml)
    runs = tmp_path / "runs"
    p = subprocess.run([LABBOX, "sweep", "--json", "--runs-dir", str(runs), str(exp)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.error/1", doc
    assert var in doc["error"]["message"] and "-e" in doc["error"]["message"], doc
    assert not runs.exists() or not any(runs.iterdir()), "a cell ran"
    (exp / "labbox.yaml").write_text(yaml.replace(f', {var}: "{value}"', ', PYTHONPATH: "."'))
    p = subprocess.run([LABBOX, "sweep", "--json", "--runs-dir", str(runs), str(exp)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout[-1500:], p.stderr[-1500:])
    log = next(runs.glob("*/run.log")).read_text()
    assert "model: m0.1" in log and "pth ran" not in log, log


def test_a_gate_that_never_got_in_is_not_claimed(tmp_path):
    """result.json said installed and enforced whenever the gate's files were staged, not
    when the gate ran. A .pth file the user's own -e PYTHONUSERBASE points at keeps it out
    (site runs it before sitecustomize): the record now says it was not installed, because
    the gate never said it was in, and an os.system that ran is not under a claimed gate."""
    import time
    from escape_lib import POLICY, Run, e2e
    exp = tmp_path / "exp"
    site = exp / "ub" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "zz_early.pth").write_text(
        "import sys; sys.path[:] = [p for p in sys.path if 'labbox-gate' not in p]\n")
    (exp / "main.py").write_text("import pickle\n"
                                 "pickle.loads(b\"cos\\nsystem\\n(S'true'\\ntR.\")\n"
                                 "print('accuracy: 1')\n")
    runs = tmp_path / "runs"
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "-e",
                      "PYTHONUSERBASE=ub", "--runs-dir", str(runs), str(exp))
    r = Run(proc, runs, time.monotonic() - t0)
    g = r.result["runtime_gate"]
    if r.rc == 1:
        pytest.skip("this interpreter's site does not read PYTHONUSERBASE's .pth: " + r.why())
    assert r.rc == 0, r.why()
    assert g["installed"] is False and g["enforced"] is False, g
    assert "never reported" in g["note"], g
    # and the same run without the .pth: the gate says it is in, and refuses
    (site / "zz_early.pth").unlink()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "-e",
                      "PYTHONUSERBASE=ub", "--runs-dir", str(runs), str(exp))
    r = Run(proc, runs, time.monotonic() - t0)
    g = r.result["runtime_gate"]
    assert r.rc == 1 and g["installed"] is True and g["enforced"] is True, r.why()
    assert g["malformed"] == 0, g  # its own line is not counted as a bad event


def _old_python():
    import glob
    for p in sorted(glob.glob("/root/.pyenv/versions/3.[4-7].*/bin/python3")) + [
            "/usr/bin/python3.7", "/usr/bin/python3.6", "/usr/local/bin/python3.7"]:
        if os.access(p, os.X_OK):
            return p
    return None


def test_an_interpreter_without_audit_hooks_stops_an_enforcing_run(tmp_path):
    """Python before 3.8 has no audit hooks (PEP 578): a gate that is to refuse cannot be
    there, so the run is stopped before it starts (125, saying why and the way out), and with
    --allow-degraded gate it runs with the record saying the gate was not in."""
    import time
    from escape_lib import POLICY, Run, e2e
    old = _old_python()
    if not old:
        pytest.skip("no Python older than 3.8 on this host")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('ran: 1')\nprint('accuracy: 1')\n")
    runs = tmp_path / "runs"
    t0 = time.monotonic()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "--python", old,
                      "--runs-dir", str(runs), str(exp))
    r = Run(proc, runs, time.monotonic() - t0)
    assert r.rc == 125 and r.result["status"] == "infra_error", r.why()
    why = r.result["failure"]["summary"]
    assert "3.8" in why and "--allow-degraded gate" in why, why
    assert "ran: 1" not in r.log()
    proc = e2e.labbox("run", "--json", *POLICY, "--runtime-gate", "on", "--python", old,
                      "--allow-degraded", "gate", "--runs-dir", str(runs), str(exp))
    r = Run(proc, runs, time.monotonic() - t0)
    assert r.rc == 0, r.why()
    g = r.result["runtime_gate"]
    assert g["installed"] is False and g["enforced"] is False, g
    assert "Error in sitecustomize" not in r.log(), r.log()


_PRE_GATE = ("import os\n"
             "os.system('echo ran > before_gate.txt')\n"
             "exec(compile(open('/run/labbox-gate/py/sitecustomize.py').read(),\n"
             "             '/run/labbox-gate/py/sitecustomize.py', 'exec'))\n")


def _forged_gate_pyc(exp):
    """An unchecked hash-based .pyc (PEP 552: never compared with its source) of code that
    runs a shell and then the real gate, where PYTHONPYCACHEPREFIX=pfx makes the interpreter
    look for the gate's compiled sitecustomize."""
    import importlib.util
    import marshal
    import sys
    code = compile(_PRE_GATE, "/run/labbox-gate/py/sitecustomize.py", "exec")
    d = exp / "pfx" / "run" / "labbox-gate" / "py"
    d.mkdir(parents=True)
    (d / f"sitecustomize.{sys.implementation.cache_tag}.pyc").write_bytes(
        importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + b"\0" * 8
        + marshal.dumps(code))
    return {"PYTHONPYCACHEPREFIX": "pfx"}


def _browser_by_warning(exp):
    """PYTHONWARNINGS's category is imported before site (so before the gate): antigravity
    opens a browser, and BROWSER names the experiment's script."""
    (exp / "browse.sh").write_text("#!/bin/sh\necho ran > before_gate.txt\n")
    (exp / "browse.sh").chmod(0o755)
    return {"PYTHONWARNINGS": "ignore::antigravity.W", "BROWSER": "./browse.sh"}


@pytest.mark.parametrize("attack", [_forged_gate_pyc, _browser_by_warning],
                         ids=["pycache_prefix", "warnings_import"])
def test_no_interpreter_variable_of_the_sweep_env_runs_code_before_the_gate(tmp_path, attack):
    """The sweep env's refusal listed five interpreter variables and LD_; others run code
    before the gate too. PYTHONPYCACHEPREFIX=pfx made the interpreter load the gate's
    compiled sitecustomize from the experiment (a .pyc never checked against its source),
    and PYTHONWARNINGS imports a module by name before site: both ran a shell under a
    runtime_gate that said installed and enforced with no event. labbox.yaml may now set no
    interpreter variable but a few harmless ones (PYTHONPATH, PYTHONHASHSEED...); checked
    from the host: nothing ran (no cell, no file the shell would write)."""
    import subprocess
    from escape_lib import LABBOX
    exp = tmp_path / "exp"
    exp.mkdir()
    env = attack(exp)
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    pairs = ", ".join(f'{k}: "{v}"' for k, v in env.items())
    (exp / "labbox.yaml").write_text("sweep:\n  parameters:\n    lr: [0.1]\n  seeds: [0]\n"
                                     f"  env: {{{pairs}}}\n")
    runs = tmp_path / "runs"
    p = subprocess.run([LABBOX, "sweep", "--json", "--runs-dir", str(runs), str(exp)],
                       capture_output=True, text=True, timeout=300)
    ran = list(runs.glob("*/exp/before_gate.txt")) if runs.exists() else []
    assert not ran, (f"code of the experiment ran before the runtime gate ({env}); the record "
                     f"said {[json.loads((f.parent.parent / 'result.json').read_text())['runtime_gate'] for f in ran]}")
    assert p.returncode == 2, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.error/1", doc
    assert "-e" in doc["error"]["message"] and any(k in doc["error"]["message"] for k in env)
    assert not runs.exists() or not any(runs.iterdir()), "a cell ran"


def test_harmless_interpreter_variables_of_the_sweep_env_still_work(tmp_path):
    import subprocess
    from escape_lib import LABBOX
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("import sys\nprint('utf8:', sys.flags.utf8_mode)\n"
                                 "print('accuracy: 1')\n")
    (exp / "labbox.yaml").write_text(
        "sweep:\n  parameters:\n    lr: [0.1]\n  seeds: [7]\n"
        "  env: {PYTHONUTF8: \"1\", PYTHONFAULTHANDLER: \"1\", PYTHONIOENCODING: \"utf-8\"}\n")
    runs = tmp_path / "runs"
    p = subprocess.run([LABBOX, "sweep", "--json", "--runs-dir", str(runs), str(exp)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.stdout[-1500:], p.stderr[-1500:])
    assert "utf8: 1" in next(runs.glob("*/run.log")).read_text()


_FORGE = r'''
import importlib.util, marshal, sys
src = ("import ctypes\n"
       "ctypes.CDLL(None).system(b'echo ran > ' + %r.encode())\n")
code = compile(src % sys.argv[3], sys.argv[2] + "/helper.py", "exec")
with open(sys.argv[1], "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + b"\0" * 12 + marshal.dumps(code))
'''


def test_a_pyc_of_the_experiment_cannot_claim_a_librarys_file_to_pass_the_gate(tmp_path):
    """The gate trusts a frame by the file its code names, and libraries may use ctypes. A
    sourceless helper.pyc shipped with the experiment (the check reads no .pyc) held code
    whose co_filename was site-packages/helper.py: `import helper` ran libc's system() under
    a runtime_gate that said installed, enforced, no event. The gate now refuses bytecode
    the import system reads from outside the interpreter's read-only paths; checked from the
    host: the shell's file is not there, and the refusal is recorded."""
    import subprocess
    from escape_lib import LABBOX
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "main.py").write_text(
        "import site, sys\nprint('EXE', sys.executable)\n"
        "print('LIB', [p for p in sys.path if p.endswith('-packages')][0])\n")
    p = subprocess.run([LABBOX, "run", "--runs-dir", str(tmp_path / "pruns"), str(probe)],
                       capture_output=True, text=True, timeout=300)
    out = dict(l.split(" ", 1) for l in p.stdout.splitlines() if l[:4] in ("EXE ", "LIB "))
    if "EXE" not in out or "LIB" not in out:
        pytest.skip("the interpreter labbox picks has no site-packages: " + p.stdout[-500:])
    exp = tmp_path / "exp"
    exp.mkdir()
    subprocess.run([out["EXE"], "-c", _FORGE, str(exp / "helper.pyc"), out["LIB"],
                    "ran_past_the_gate.txt"], check=True, timeout=60)
    (exp / "main.py").write_text("import helper\nprint('accuracy: 1')\n")
    runs = tmp_path / "runs"
    p = subprocess.run([LABBOX, "run", "--json", "--runtime-gate", "on", "--runs-dir", str(runs),
                        str(exp)], capture_output=True, text=True, timeout=300)
    res = json.loads(p.stdout)
    g = res["runtime_gate"]
    assert not list(runs.glob("*/exp/ran_past_the_gate.txt")), (
        f"a .pyc claiming {out['LIB']}/helper.py ran libc's system() past the gate, which "
        f"said: {json.dumps(g)[:800]}")
    assert res["status"] == "failed", res["status"]
    hit = [e for e in g["events"] if e["event"] == "marshal.loads" and e["refused"]]
    assert hit and "helper.pyc" in (hit[0]["detail"] or ""), json.dumps(g)[:1500]


# The process's own memory, written through /proc: a bytes object's payload overwritten in
# place, and the runtime gate's stand-in read for its real fork_exec. The gate judges a write
# by the path its audit event shows, and os.open's event does not show dir_fd.
OWN_MEMORY = r'''
import os, struct, sys
data = b"unchanged"
where = id(data) + bytes.__basicsize__ - 1
tries = {
    "path": lambda: os.open("/proc/self/mem", os.O_RDWR),
    "dir_fd": lambda: os.open("mem", os.O_RDWR, dir_fd=os.open("/proc/self", os.O_RDONLY)),
    "root_fd": lambda: os.open("proc/self/mem", os.O_RDWR, dir_fd=os.open("/", os.O_RDONLY)),
}
for name, how in tries.items():
    try:
        fd = how()
        os.pwrite(fd, b"CHANGED!!", where)
        print(name, "opened")
    except OSError as e:
        print(name, type(e).__name__, e.errno)
print("data:", data.decode())
try:
    import _posixsubprocess
    from multiprocessing import util
    m = os.open("mem", os.O_RDWR, dir_fd=os.open("/proc/self", os.O_RDONLY))
    rd = lambda a: struct.unpack("<Q", os.pread(m, 8, a))[0]
    wr = lambda a, v: os.pwrite(m, struct.pack("<Q", v), a)
    kw = rd(id(_posixsubprocess.fork_exec) + (64 if sys.version_info >= (3, 11) else 40))
    wr(kw, rd(kw) + 1)
    holder = [None]
    wr(rd(id(holder) + 24), kw)
    _posixsubprocess.fork_exec = holder[0]["_l"][1]
    os.waitpid(util.spawnv_passfds(b"/bin/sh", [b"/bin/sh", b"-c", b"echo x > MARKER"], ()), 0)
except Exception as e:
    print("spawn:", type(e).__name__)
print("accuracy: 1")
'''


@pytest.mark.parametrize("gate", ["on", "off"])
def test_the_process_memory_is_not_written_through_proc(tmp_path, gate):
    """Whatever path or directory descriptor names it, no file under /proc is opened for
    writing in the sandbox (Landlock): the experiment's own memory stays its interpreter's,
    and the gate's state with it. With the gate on, the write that would have turned the
    stand-in's real fork_exec over never happens; with it off, the kernel's rule still
    holds."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(OWN_MEMORY)
    p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--runtime-gate", gate,
                        "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    run_dir = doc["run_dir"]
    log = open(os.path.join(run_dir, "run.log")).read()
    assert not os.path.exists(os.path.join(run_dir, "exp", "MARKER")), log[-3000:]
    assert "data: unchanged" in log, log[-3000:]
    assert "opened" not in log, log[-3000:]
    assert doc["isolation"]["landlock"] == "no writes under /proc or /sys", doc["isolation"]


# Code that reaches ctypes (multiprocessing.sharedctypes hands it over) calls libc with no
# audit event at all: the gate never sees the exec. libc's functions are found from
# /proc/self/maps and the library's own symbol table, read as plain files.
PAST_THE_GATE = r'''
import multiprocessing.sharedctypes as sc, os, struct, sys
ct = getattr(sc, "ct" + "ypes")

def libc(name):
    path = base = None
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and "/libc.so" in p[5] and int(p[2], 16) == 0:
                base, path = int(p[0].split("-")[0], 16), p[5]
                break
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for s in secs:
        if s[1] == 11:  # the dynamic symbols
            strtab = secs[s[6]][4]
            for off in range(s[4], s[4] + s[5], 24):
                st_name, _, _, _, st_value, _ = struct.unpack_from("<IBBHQQ", data, off)
                end = data.index(b"\0", strtab + st_name)
                if data[strtab + st_name:end] == name and st_value:
                    return base + st_value
    raise SystemExit("no %s in libc" % name)

def strv(items):
    arr = (ct.c_char_p * (len(items) + 1))(*[x.encode() for x in items])
    return arr

how = sys.argv[1]
here = os.getcwd()
touch = "open(%r, 'w').write('ran')" % os.path.join(here, "MARKER")
execve = ct.CFUNCTYPE(ct.c_int, ct.c_char_p, ct.c_void_p, ct.c_void_p)(libc(b"execve"))
env = ["%s=%s" % kv for kv in os.environ.items()]
if how == "system":
    ct.CFUNCTYPE(ct.c_int, ct.c_char_p)(libc(b"system"))(("touch %s/MARKER" % here).encode())
elif how == "dynamic_loader":
    ld = [p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")
          if os.path.exists(p)][0]
    execve(ld.encode(), strv([ld, "/bin/sh", "-c", "touch MARKER"]), strv(env))
elif how == "isolated_interpreter":
    execve(sys.executable.encode(), strv([sys.executable, "-I", "-c", touch]), strv(env))
elif how == "interpreter_without_the_gate":
    env = [kv for kv in env if not kv.startswith("PYTHONPATH=")]
    execve(sys.executable.encode(), strv([sys.executable, "-s", "-c", touch]), strv(env))
elif how == "interpreter_by_a_venvs_name":
    # the same binary, started by a name beside a pyvenv.cfg the experiment wrote: its
    # site-packages' .pth lines run before the gate's sitecustomize
    site = "v/lib/python%d.%d/site-packages" % sys.version_info[:2]
    os.makedirs(site)
    os.makedirs("v/bin")
    os.symlink(sys.executable, "v/bin/python3")
    open("v/pyvenv.cfg", "w").write("home = /usr/bin\ninclude-system-site-packages = true\n")
    open(site + "/zz.pth", "w").write("import os; open(%r, 'w').write('pth')\n"
                                      % os.path.join(here, "MARKER"))
    execve(sys.executable.encode(), strv([here + "/v/bin/python3", "-s", "-c", "pass"]),
           strv(env))
elif how == "untraced_clone":
    # a child the trace does not follow (CLONE_UNTRACED): refused by seccomp
    syscall = ct.CFUNCTYPE(ct.c_long, ct.c_long, ct.c_long, ct.c_long, ct.c_long, ct.c_long,
                           ct.c_long)(libc(b"syscall"))
    pid = syscall(56, 0x00800000 | 17, 0, 0, 0, 0)
    if pid == 0:
        execve(b"/bin/sh", strv(["sh", "-c", "touch MARKER"]), strv(env))
        os._exit(99)
    if pid > 0:
        os.waitpid(pid, 0)
    print("clone_refused: %d" % (pid < 0))
elif how == "inherited_landlock":
    # a Landlock layer of the experiment's own, which an exec inherits, could deny the
    # interpreter its gate's files: refused by seccomp
    syscall = ct.CFUNCTYPE(ct.c_long, ct.c_long, ct.c_long, ct.c_long, ct.c_long)(libc(b"syscall"))
    print("landlock_refused: %d" % (syscall(444, 0, 0, 1) < 0))  # the ABI version
elif how == "option_that_writes_while_the_gate_is_read":
    # -v writes as the gate is imported; a write that fails there (a full file, a limit) is
    # an error site passes over, and the interpreter would go on without its gate
    execve(sys.executable.encode(), strv([sys.executable, "-s", "-v", "-W", "ignore::site.X",
                                          "-c", touch]), strv(env))
elif how == "lowered_limit":
    # a limit the exec inherits, under which the interpreter could fail to read its gate
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (5, hard))
    execve(sys.executable.encode(), strv([sys.executable, "-s", "-c", "pass"]), strv(env))
print("still here")
print("accuracy: 1")
'''


@pytest.mark.parametrize("how", ["system", "dynamic_loader", "isolated_interpreter",
                                 "interpreter_without_the_gate", "interpreter_by_a_venvs_name",
                                 "untraced_clone", "inherited_landlock", "lowered_limit",
                                 "option_that_writes_while_the_gate_is_read"])
def test_a_process_started_past_the_gate_never_runs(tmp_path, how):
    """Through ctypes a libc call starts a program with no audit event; the sandbox's exec
    guard sees every exec as the kernel made it and kills, before it runs, any that is not the
    run's interpreter started with its gate: a shell, a program through the dynamic loader, the
    interpreter isolated from its site (-I) or without the gate on its path. The host finds no
    MARKER, and the run fails naming the exec."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(PAST_THE_GATE)
    p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--runtime-gate", "on",
                        "--python", PYTHON, "--runs-dir", str(tmp_path / "runs"), str(exp),
                        "--", how],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    run_dir = doc["run_dir"]
    log = open(os.path.join(run_dir, "run.log")).read()
    assert not os.path.exists(os.path.join(run_dir, "exp", "MARKER")), log[-3000:]
    assert doc["isolation"]["exec_guard"], doc["isolation"]
    if how in ("untraced_clone", "inherited_landlock"):
        # refused at the call: nothing was started, no rule laid down
        what = "clone_refused" if how == "untraced_clone" else "landlock_refused"
        assert doc["metrics"]["values"].get(what) == 1, log[-2000:]
        return
    execs = [e for e in doc["runtime_gate"]["events"] if e["event"] == "exec"]
    assert execs and execs[0]["refused"] is True and execs[0]["rule"] == "LB101", (
        json.dumps(doc["runtime_gate"])[:2000], log[-2000:])
    assert doc["status"] == "failed" and p.returncode == 1, (doc["status"], log[-2000:])
    assert doc["failure"]["class"] == "gate_refused", doc["failure"]
    assert doc["failure"]["gate_event"] == "exec"
    if how == "lowered_limit":
        assert "RLIMIT_NOFILE" in execs[0]["detail"], execs[0]


def test_the_gates_own_children_pass_the_exec_guard(tmp_path):
    """What the gate lets a child start (a spawn pool, a forkserver, the resource tracker) is
    the run's interpreter with the gate, and passes: no exec event, the numbers right."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(
        "import multiprocessing as mp\n"
        "def sq(x):\n"
        "    return x * x\n"
        "if __name__ == '__main__':\n"
        "    for method in ('spawn', 'forkserver'):\n"
        "        with mp.get_context(method).Pool(2) as pool:\n"
        "            print('%s: %d' % (method, sum(pool.map(sq, range(5)))))\n")
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON,
                        "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    assert doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["isolation"]["exec_guard"], doc["isolation"]
    assert doc["runtime_gate"]["events"] == [], doc["runtime_gate"]
    assert doc["metrics"]["values"] == {"spawn": 30, "forkserver": 30}, doc["metrics"]


OTHER_LIMITS = r'''
import multiprocessing as mp, os, resource, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))  # its own: allowed
child = mp.get_context("fork").Process(target=time.sleep, args=(3,))
child.start()
got = []
for lim in (resource.RLIMIT_NOFILE, resource.RLIMIT_AS, resource.RLIMIT_FSIZE):
    try:
        resource.prlimit(child.pid, lim, (3, hard if lim == resource.RLIMIT_NOFILE else -1))
        got.append(0)
    except OSError:
        got.append(1)
after = resource.prlimit(child.pid, resource.RLIMIT_NOFILE)
child.join()
print("refused: %d" % sum(got))
print("unchanged: %d" % (after[0] == soft - 1))
'''


def test_another_processes_limits_cannot_be_lowered(tmp_path):
    """A limit lowered from outside while a started interpreter reads its runtime gate (too
    many open files) fails that read, and site goes on without the gate: the exec guard had
    seen the limits right at the exec. So no process of the run sets another's limits; its
    own stay its own to set. The host reads the numbers the experiment could reach."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(OTHER_LIMITS)
    p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--python", PYTHON,
                        "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    assert doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["metrics"]["values"] == {"refused": 3, "unchanged": 1}, doc["metrics"]


VENV_WRITES = r'''
import multiprocessing as mp, os, sys
here = os.getcwd()
site = [p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)][0]
tries = {
    "pth": lambda: open(os.path.join(site, "zz.pth"), "w").write(
        "import os; open(%r, 'w').write('pth')\n" % os.path.join(here, "MARKER")),
    "cfg": lambda: open(os.path.join(sys.prefix, "pyvenv.cfg"), "a").write("home = /nowhere\n"),
    "rename": lambda: os.rename(sys.prefix, sys.prefix + ".old"),
    "mkdir": lambda: os.mkdir(os.path.join(site, "evil")),
}
refused = 0
for name, f in tries.items():
    try:
        f()
        print("done", name)
    except OSError as e:
        refused += 1
        print("refused", name, e.errno)
def child():
    print("child_ran: 1", flush=True)
if __name__ == "__main__":
    p = mp.get_context("spawn").Process(target=child)
    p.start()
    p.join()
    print("refused: %d" % refused)
    open("results.ok", "w").write("the experiment directory stays writable")
'''


def test_a_venv_staged_with_the_experiment_stays_as_staged(tmp_path):
    """A venv inside the experiment runs from the run's staged copy, which the experiment
    can write: a .pth it adds to site-packages, or a pyvenv.cfg it rewrites, would run before
    the runtime gate in every interpreter the run starts by the venv's name, which the exec
    guard lets through. Under the gate the venv is read-only and cannot be renamed away; the
    rest of the experiment directory stays writable. The host finds no MARKER."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(VENV_WRITES)
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(exp / "venv")], check=True,
                   timeout=CALL_TIMEOUT)
    p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--runtime-gate",
                        "on", "--python", str(exp / "venv" / "bin" / "python"),
                        "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    run_dir = doc["run_dir"]
    log = open(os.path.join(run_dir, "run.log")).read()
    assert not os.path.exists(os.path.join(run_dir, "exp", "MARKER")), log[-3000:]
    assert doc["status"] == "completed", (json.dumps(doc)[:2000], log[-2000:])
    assert doc["metrics"]["values"] == {"refused": 4, "child_ran": 1}, log[-2000:]
    assert os.path.exists(os.path.join(run_dir, "exp", "results.ok")), log[-2000:]
    cfg = open(os.path.join(run_dir, "exp", "venv", "pyvenv.cfg")).read()
    assert "/nowhere" not in cfg, cfg
    assert doc["isolation"]["exec_guard"], doc["isolation"]
    # a write there that nothing catches: the verdict says why it is read-only, and what
    # lifts it is the gate's mode, not a volume
    (exp / "main.py").write_text("import sys\nopen(sys.prefix + '/x.pth', 'w')\n")
    p = subprocess.run([LABBOX, "run", "--json", "--python", str(exp / "venv" / "bin" / "python"),
                        "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    f = json.loads(p.stdout)["failure"]
    assert f["class"] == "sandbox_restriction", f
    assert "--runtime-gate record" in f["suggestion"] and not f.get("escalation"), f
    # a link inside the venv that leads where the experiment writes (site-packages moved
    # beside it) would let it change the venv all the same: the run is refused
    site = next((exp / "venv" / "lib").glob("python3*/site-packages"))
    site.rmdir()
    (exp / "sp").mkdir()
    site.symlink_to(os.path.relpath(exp / "sp", site.parent))
    (exp / "main.py").write_text(VENV_WRITES)
    p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--runtime-gate",
                        "on", "--python", str(exp / "venv" / "bin" / "python"), "--runs-dir",
                        str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    assert p.returncode == 125 and doc["failure"]["class"] == "infra_error", doc["failure"]
    assert "leads out of it" in doc["failure"]["summary"], doc["failure"]
    assert not os.path.exists(os.path.join(doc["run_dir"], "exp", "MARKER"))


IPC_CHAIN = r'''
import multiprocessing as mp, sys
def s(x):
    b = x.encode()
    return b"X" + len(b).to_bytes(4, "little") + b
def ga(o, n):
    return b"cbuiltins\ngetattr\n(" + o + s(n) + b"tR"
B = ga(b"cbuiltins\nlen\n", "__self__")  # the builtins module
imp = ga(B, "__import__")
EXEC = ga(B, "exec")
SRC = s("open('MARKER', 'w')")
tests = {"import_pty": imp + b"(" + s("pty") + b"tR",
         "exec_string": EXEC + b"(" + SRC + b"tR",
         "native_call": ga(ga(imp + b"(" + s("ctypes") + b"tR", "CDLL") + b"(NtR", "getpid") + b")R",
         # handed on to a function on the pickle list that calls what it is given, from a
         # frame of its own (a pool's mapstar)
         "through_mapstar": b"cmultiprocessing.pool\nmapstar\n((" + EXEC + b"(" + SRC +
                            b"lttR"}
wrap = None
if sys.argv[1:] == ["torch"]:
    from torch.multiprocessing.queue import ConnectionWrapper as wrap
refused = 0
for name, body in tests.items():
    a, b = mp.Pipe()
    b = wrap(b) if wrap else b
    a.send_bytes(b"\x80\x04" + body + b".")
    try:
        print(name, "ran:", repr(b.recv())[:80])
    except PermissionError as e:
        refused += 1
        print(name, "refused:", e)
print("refused: %d" % refused)
'''


@pytest.mark.parametrize("reader", ["multiprocessing", "torch"])
def test_a_pickle_on_multiprocessings_pipes_is_held_to_the_experiments_rules(tmp_path, reader):
    """A crafted pickle sent down a Pipe chains getattr from len to the builtins module and
    calls __import__, exec or a native function. multiprocessing's own readers allowed
    getattr once (a bound method's pickle named it), and what it called was judged as the
    experiment's; now multiprocessing sends bound methods with labbox's getattr and its
    readers refuse builtins.getattr at find_class. The host finds no MARKER; each load is
    refused."""
    if reader == "torch":
        pytest.importorskip("torch")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(IPC_CHAIN)
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir",
                        str(tmp_path / "runs"), str(exp)] +
                       (["--", "torch"] if reader == "torch" else []),
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    doc = json.loads(p.stdout)
    log = open(os.path.join(doc["run_dir"], "run.log")).read()
    assert not os.path.exists(os.path.join(doc["run_dir"], "exp", "MARKER")), log[-2000:]
    assert doc["metrics"]["values"].get("refused") == 4, log[-2000:]
    refused = [e for e in doc["runtime_gate"]["events"] if e["refused"]]
    assert any(e["event"] == "pickle.find_class" and e["args"] == ["builtins", "getattr"]
               for e in refused), doc["runtime_gate"]


CLOSED_CHANNEL = {
    # an uncaught exception, its record kept out: no channel, a silent hook, exit 0 at the end
    "uncaught": ("import atexit, os, resource, sys\n"
                 "print('accuracy: 0.91')\n"
                 "os.close(3)\n"
                 "resource.setrlimit(resource.RLIMIT_NOFILE,\n"
                 "                   (3, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
                 "atexit.register(os._exit, 0)\n"
                 "sys.excepthook = lambda *a: None\n"
                 "raise RuntimeError('the training diverged; this must fail the run')\n", ()),
    # refusals the code catches, kept out of runtime_gate.refused the same way
    "refusals": ("import os, resource\n"
                 "os.close(3)\n"
                 "resource.setrlimit(resource.RLIMIT_NOFILE,\n"
                 "                   (3, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
                 "for i in range(3):\n"
                 "    try:\n"
                 "        os.system('true')\n"
                 "    except PermissionError as e:\n"
                 "        print('refused:', e)\n"
                 "print('accuracy: 0.5')\n", ("--policy", "permissive", "--runtime-gate", "on")),
}


@pytest.mark.parametrize("case", sorted(CLOSED_CHANNEL))
def test_a_channel_closed_for_good_stops_the_interpreter_not_the_record(tmp_path, case):
    """The experiment closes the gate's channel and lowers RLIMIT_NOFILE so that it cannot be
    opened again: what it did next (an uncaught exception hidden by exiting 0, refusals it
    caught) would be missing from a record that read `channel: read`, and the run `completed`.
    The gate stops the interpreter instead (exit 126), the run fails, and says why."""
    from escape_lib import e2e
    code, opts = CLOSED_CHANNEL[case]
    exp = e2e.write_exp(tmp_path, code)
    r = e2e.run_exp(exp, tmp_path / "runs", *opts)
    assert r.result["status"] == "failed" and r.result["exit_code"] == 126, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction" and "gate's channel" in f["summary"], f
    assert "refused:" not in r.log(), r.why()
