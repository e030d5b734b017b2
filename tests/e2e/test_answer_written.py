"""A command whose answer cannot be written (stdout closed, a full disk behind it) does not
exit 0: it exits 74 (EX_IOERR) and says so on stderr, and a run is recorded all the same.
A failure's own exit status is kept."""
import json
import subprocess
from pathlib import Path

from conftest import LABBOX, PYTHON, CALL_TIMEOUT, labbox, write_exp


def sh(cmd, cwd):
    return subprocess.run(["/bin/sh", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)


def test_a_run_with_stdout_closed_is_recorded_and_exits_74(tmp_path):
    exp = write_exp(tmp_path, 'print("accuracy: 0.5")\n', yaml="metrics: [accuracy]\n")
    p = sh(f"'{LABBOX}' run --json -q --python '{PYTHON}' . >&-", exp)
    assert p.returncode == 74, p.stderr
    assert "standard output is closed" in p.stderr, p.stderr
    runs = list((exp / ".labbox" / "runs").iterdir())
    assert len(runs) == 1, runs
    res = json.loads((runs[0] / "result.json").read_text())
    assert res["status"] == "completed" and res["metrics"]["values"]["accuracy"] == 0.5, res
    assert (runs[0] / "run.log").read_text().strip(), "no run.log"
    # and the index has it: `runs list` tells the run that was not told
    q = labbox("runs", "list", "--json", cwd=exp)
    assert q.returncode == 0 and json.loads(q.stdout)["runs"][0]["id"] == runs[0].name


def test_a_failed_run_with_stdout_closed_keeps_its_exit_status(tmp_path):
    exp = write_exp(tmp_path, 'raise SystemExit(3)\n')
    p = sh(f"'{LABBOX}' run -q --python '{PYTHON}' . >&-", exp)
    assert p.returncode == 1, p.stderr


def test_every_command_fails_when_its_answer_is_lost(tmp_path):
    exp = write_exp(tmp_path, 'print("accuracy: 0.5")\n', yaml="metrics: [accuracy]\n")
    assert labbox("run", "-q", "--python", PYTHON, ".", cwd=exp).returncode == 0
    for cmd in ("runs list --json", "runs list", "check --json .", "version", "--help"):
        p = sh(f"'{LABBOX}' {cmd} >&-", exp)
        assert p.returncode == 74, (cmd, p.returncode, p.stderr)
        assert "standard output is closed" in p.stderr, (cmd, p.stderr)
        p = sh(f"'{LABBOX}' {cmd} >/dev/full", exp)
        assert p.returncode == 74, (cmd, p.returncode, p.stderr)
        assert "cannot write the answer to standard output" in p.stderr, (cmd, p.stderr)
    # report writes its body past stdio: the same 74 and the same words, for every format
    rid = next((exp / ".labbox" / "runs").iterdir()).name
    for fmt in ("csv", "md", "html"):
        for redir, said in ((">&-", "standard output is closed"),
                            (">/dev/full", "cannot write the answer to standard output")):
            p = sh(f"'{LABBOX}' report {rid} --format {fmt} {redir}", exp)
            assert p.returncode == 74, (fmt, redir, p.returncode, p.stderr)
            assert said in p.stderr, (fmt, redir, p.stderr)
    # the check's kept answer (written past stdio) too
    p = sh(f"'{LABBOX}' check . >/dev/full", exp)
    p = sh(f"'{LABBOX}' check . >/dev/full", exp)
    assert p.returncode == 74, p.stderr
    # what was written is still exit 0
    assert labbox("runs", "list", "--json", cwd=exp).returncode == 0


def test_exec_fails_when_its_commands_output_is_lost(tmp_path):
    # exec's answer is its command's output, relayed by labbox (the command writes into a
    # pipe and never sees the full disk or the closed stdout): lost, it is exit 74, said
    p = sh(f"'{LABBOX}' exec -- /bin/echo hi >/dev/full", tmp_path)
    assert p.returncode == 74, p.stderr
    assert "cannot write the answer to standard output: No space left on device" in p.stderr, p.stderr
    p = sh(f"'{LABBOX}' exec -- /bin/sh -c 'seq 1 200000' >/dev/full", tmp_path)
    assert p.returncode == 74, p.stderr
    p = sh(f"'{LABBOX}' exec -- /bin/echo hi >&-", tmp_path)
    assert p.returncode == 74, p.stderr
    assert "standard output is closed" in p.stderr, p.stderr
    # the command's own failure keeps its status; nothing written is nothing lost
    p = sh(f"'{LABBOX}' exec -- /bin/sh -c 'echo hi; exit 3' >/dev/full", tmp_path)
    assert p.returncode == 3, p.stderr
    p = sh(f"'{LABBOX}' exec -- /bin/true >/dev/full", tmp_path)
    assert p.returncode == 0, p.stderr
    # --json: the command's output is a copy on stderr; the document on stdout is the answer
    p = sh(f"'{LABBOX}' exec --json -- /bin/echo hi", tmp_path)
    assert p.returncode == 0 and json.loads(p.stdout)["schema"] == "labbox.exec/1", p.stderr


def test_exec_waits_for_a_slow_reader_and_loses_nothing(tmp_path):
    # exec's output is the product (`labbox exec -- gen | consumer`): a reader that is slow to
    # start gets every line, as from the command itself; labbox never drops what it relays
    p = subprocess.run(["/bin/bash", "-c", f"'{LABBOX}' exec -- /usr/bin/seq 1 2000000 | "
                        "(sleep 2; wc -l); echo rc=${PIPESTATUS[0]}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    assert p.stdout.split() == ["2000000", "rc=0"], (p.stdout, p.stderr)
    assert "not written" not in p.stderr and "not shown" not in p.stderr, p.stderr
    # within the budget only: what the reader had not taken when it ended is said, and lost
    p = subprocess.run(["/bin/bash", "-c", f"'{LABBOX}' exec --budget 1 -- /usr/bin/seq 1 "
                        "20000000 | (sleep 3; wc -l); echo rc=${PIPESTATUS[0]}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=CALL_TIMEOUT)
    assert p.stdout.split()[-1] == "rc=124", (p.stdout, p.stderr)
    assert "of the command's output were not written" in p.stderr, p.stderr
