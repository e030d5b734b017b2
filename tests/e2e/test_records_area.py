"""labbox's own records (runs directories, the index, the sweeps, the user's cache) are never
an experiment and never hold an interpreter run on the host.

A run writes its exp/ inside the runs directory: a program there is the sandboxed code's,
so naming it as the interpreter must not run it on this host (it is probed in the sandbox, or
refused to an MCP client). An experiment directory that is a runs directory, a run's own
directory or the sweeps would show every run's manifest (its -e values), results and log to
the experiment: refused (exit 2). A run's staged copy (RUNS/ID/exp, what rerun repeats)
stays an experiment.
"""
import json
import os
import subprocess
import uuid

from conftest import LABBOX, PYTHON, labbox, run_exp, write_exp

PLANT = """
import os
open("py", "w").write("#!/bin/sh\\necho ran > {marker}\\nexec {python} \\"$@\\"\\n")
os.chmod("py", 0o755)
print("accuracy: 1")
"""


def planted(tmp_path):
    """A completed run whose exp/ holds an executable script that, run on the host, leaves
    marker (the host's /tmp: the sandbox's /tmp is its own)."""
    marker = f"/tmp/labbox-records-{uuid.uuid4().hex[:10]}"
    exp = write_exp(tmp_path, PLANT.format(marker=marker, python=PYTHON))
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    return r, marker


def test_an_interpreter_a_run_wrote_is_never_run_on_the_host(tmp_path):
    r, marker = planted(tmp_path)
    other = write_exp(tmp_path, 'print("accuracy: 2")\n', name="other")
    try:
        second = run_exp(other, tmp_path / "runs", python=str(r.exp / "py"))
        assert not os.path.exists(marker), "the run's script ran on the host"
        # Probed in the sandbox, as an interpreter the experiment names is.
        assert second.rc == 0, second.why()
        man = json.loads((second.run_dir / "manifest.json").read_text())
        assert man["interpreter"]["probed_in_sandbox"] is True, man["interpreter"]
        chk = labbox("check", "--python", r.exp / "py", other)
        assert not os.path.exists(marker), "labbox check ran the run's script on the host"
        assert chk.returncode in (0, 2, 3), chk.stderr
    finally:
        if os.path.exists(marker):
            os.unlink(marker)


def test_an_experiment_directory_among_the_records_is_refused(tmp_path):
    r, _ = planted(tmp_path)
    runs = tmp_path / "runs"
    for expdir in (runs, r.run_dir, tmp_path / "sweeps"):
        expdir.mkdir(exist_ok=True)
        p = labbox("run", "--python", PYTHON, "--runs-dir", runs, "--entry",
                   f"{r.run_dir.name}/exp/main.py" if expdir == runs else "exp/main.py",
                   expdir)
        assert p.returncode == 2, (expdir, p.stdout, p.stderr)
        assert "labbox's own records" in p.stderr, p.stderr
    # The run's staged copy is an experiment: what rerun repeats when the original changed.
    again = run_exp(r.exp, runs)
    assert again.rc == 0, again.why()
    # The same from another runs directory: the first one is known to this user's labbox.
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "elsewhere", r.run_dir)
    assert p.returncode == 2 and "labbox's own records" in p.stderr, p.stderr


def mcp_call(cwd, calls, *server_args):
    """Each (name, arguments) as a tools/call to one `labbox mcp`; the results in order."""
    p = subprocess.Popen([LABBOX, "mcp", *server_args], cwd=cwd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    try:
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                  "params": {"protocolVersion": "2025-06-18",
                                             "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "0"}}})
                      + "\n")
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
                      + "\n")
        p.stdin.flush()
        assert "result" in json.loads(p.stdout.readline())
        for i, (name, args) in enumerate(calls, 1):
            if callable(args):
                args = args(out)
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                      "params": {"name": name, "arguments": args}}) + "\n")
            p.stdin.flush()
            while True:
                msg = json.loads(p.stdout.readline())
                if msg.get("id") == i:
                    out.append(msg)
                    break
    finally:
        p.stdin.close()
        p.wait(timeout=120)
        p.stdout.close()
        p.stderr.close()
    return out


def test_an_mcp_client_cannot_name_what_its_runs_wrote(tmp_path):
    """The server's root is a project under the home; its runs go to the home's .labbox/runs,
    outside the root. A client's run writes a script into its exp/, then names it as the
    interpreter, or names the runs directory as the experiment: both refused, nothing ran on
    the host, and no record of the user's own runs reached the client."""
    home = tmp_path / "home"
    (home / "proj").mkdir(parents=True)
    marker = f"/tmp/labbox-records-{uuid.uuid4().hex[:10]}"
    # The user's own run, with a secret on its command line.
    mine = write_exp(home / "proj", 'print("accuracy: 3")\n', name="mine")
    p = labbox("run", "--python", PYTHON, "-e", "API_KEY=s3cret-value", mine, cwd=home)
    assert p.returncode == 0, p.stderr

    def with_python(out):
        doc = json.loads(out[0]["result"]["content"][-1]["text"])
        return {"files": {"main.py": "print('accuracy: 2')\n"},
                "python": doc["run_dir"] + "/exp/py"}

    def records(out):
        return {"expdir": str(home / ".labbox" / "runs"), "entry": "x/exp/main.py"}

    try:
        res = mcp_call(home, [
            ("run", {"files": {"main.py": PLANT.format(marker=marker, python=PYTHON)}}),
            ("run", with_python),
            ("run", records),
        ], "--root", str(home / "proj"))
        assert not os.path.exists(marker), "the client's script ran on the host"
        for r in res[1:]:
            text = json.dumps(r)
            assert r["result"]["isError"] is True, text
            assert "s3cret-value" not in text
        assert "run records" in res[1]["result"]["content"][0]["text"]
    finally:
        if os.path.exists(marker):
            os.unlink(marker)


LOOK = """
import os
seen = []
for root, dirs, files in os.walk("."):
    for f in files:
        if f in ("manifest.json", "record.key", "runs-dirs") or f.startswith("labbox.db"):
            seen.append(os.path.join(root, f))
print("records_seen:", len(seen))
for s in seen:
    print("seen", s)
"""


def test_records_inside_the_experiment_are_never_staged(tmp_path):
    """`labbox run .` with runs directories of the project's own (--runs-dir ./runsA, then
    ./runsB): the index beside them, the sweeps and the other runs directory stay out of the
    staged copy, on the first run too, so no run reads another's manifest (its -e values)."""
    exp = write_exp(tmp_path, LOOK)
    first = labbox("run", "--json", "--python", PYTHON, "--runs-dir", "./runsA", "-e",
                   "API_KEY=s3cret-value", ".", cwd=exp)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["metrics"]["values"]["records_seen"] == 0, first.stdout
    second = labbox("run", "--json", "--python", PYTHON, "--runs-dir", "./runsB", ".", cwd=exp)
    doc = json.loads(second.stdout)
    assert second.returncode == 0 and doc["metrics"]["values"]["records_seen"] == 0, doc
    staged = exp / "runsB" / doc["id"] / "exp"
    assert not any(p.name == "manifest.json" for p in staged.rglob("*")), "records staged"
    assert "s3cret-value" not in (exp / "runsB" / doc["id"] / "run.log").read_text()


def test_the_users_cache_inside_the_experiment_is_never_staged(tmp_path):
    """The home directory as the experiment (`labbox run .` in ~): labbox's cache there, with
    the key that seals the records, stays out of the staged copy."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "main.py").write_text(LOOK)
    env = dict(os.environ, HOME=str(home))
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_STATE_HOME", None)
    for _ in range(2):  # the first run makes the cache, the second would stage it
        p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", ".",
                   cwd=home, env=env)
        assert p.returncode == 0, p.stderr
        doc = json.loads(p.stdout)
        assert doc["metrics"]["values"]["records_seen"] == 0, doc["metrics"]
    assert (home / ".cache" / "labbox").is_dir()
    assert (home / ".local" / "state" / "labbox" / "record.key").is_file()
