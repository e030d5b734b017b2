"""The runtime gate's events channel, attacked from inside: the experiment holds a descriptor
to it (os.write raises no audit event) and sees its path. What the host checks: the channel
costs the host's disk nothing however much is written to it, and a refusal the gate recorded
stays in result.json's runtime_gate whatever the experiment does to the channel afterwards."""
import json

from escape_lib import LiveRun, MiB, free_bytes, run_dirs, stage


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
    # the flood is not silently absorbed: the record says the channel was more than was read
    assert g["channel"] == "read in part", json.dumps(g)[:1500]
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
