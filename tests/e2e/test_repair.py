"""`labbox run --repair-cmd CMD [--max-repairs N] [--apply]`: the repair loop with real repair
commands (scripts written by the tests), real experiments and the shipped example.

The experiment has a planted bug (a division by a zero scale); the scripts fix it on their
second try, never fix it, crash, or hang. What is checked is what a user reads: the exit code,
the verdict's attempts and repair block, repairs/N/ in the run directory, and whether the
experiment directory was touched.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
from pathlib import Path

from conftest import (LABBOX, PYTHON, REPO, describe_pids, labbox, pids_with_marker, run_dirs,
                      run_exp, unique, wait_for, wait_no_marker, kill_marker, write_exp)

BUGGY = """
import random
random.seed(0)
scale = 0
print("accuracy:", 1.5 / scale)
"""


def script(tmp_path, body, name="repair.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body).lstrip("\n"))
    return f"{PYTHON} {p}"


# Reads the verdict on stdin; the first repair makes a change that does not fix anything, the
# second one fixes the planted bug.
SECOND_TRY = """
import json, os, sys
verdict = json.load(sys.stdin)
n = int(os.environ["LABBOX_REPAIR_ATTEMPT"])
print("repair", n, "saw", verdict["status"], verdict["failure"]["class"], "in", os.getcwd())
src = open("main.py").read()
if n == 1:
    src += "# looked at it\\n"
else:
    src = src.replace("scale = 0", "scale = 2")
open("main.py", "w").write(src)
"""


def tree_digest(d: Path):
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        h.update(str(p.relative_to(d)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def test_repair_fixes_the_bug_on_its_second_attempt(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    before = tree_digest(exp)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--repair-cmd", script(tmp_path, SECOND_TRY))
    assert r.rc == 0, r.why()
    res = r.result
    assert res["metrics"]["values"]["accuracy"] == 0.75
    assert [a["status"] for a in res["attempts"]] == ["failed", "failed", "completed"]
    assert [a["source"] for a in res["attempts"]] == ["experiment", "repair 1", "repair 2"]
    assert [a["trigger"] for a in res["attempts"]] == [None, "repair", "repair"]
    rp = res["repair"]
    assert rp["attempts"] == 2 and rp["fixed"] is True and rp["gave_up"] is False
    assert rp["max_repairs"] == 3 and rp["applied"] is False
    assert rp["dir"] == str(r.run_dir / "repairs")
    rep = r.run_dir / "repairs"
    d1 = (rep / "1" / "diff.patch").read_text()
    assert "+# looked at it" in d1 and "--- a/main.py" in d1 and "+++ b/main.py" in d1
    d2 = (rep / "2" / "diff.patch").read_text()
    assert "-scale = 0" in d2 and "+scale = 2" in d2 and "+# looked at it" not in d2
    # The command got each verdict on stdin and ran in a copy, not in the experiment.
    log1 = (rep / "1" / "cmd.log").read_text()
    assert "repair 1 saw failed code_error" in log1
    assert str(exp) not in log1
    assert "repair 2 saw failed code_error" in (rep / "2" / "cmd.log").read_text()
    v1 = json.loads((rep / "1" / "result.json").read_text())
    v2 = json.loads((rep / "2" / "result.json").read_text())
    assert v1["status"] == "failed" and v2["status"] == "completed"
    assert v2["id"] == res["id"]
    all_patch = (rep / "all.patch").read_text()
    assert "+scale = 2" in all_patch and "+# looked at it" in all_patch
    # Three runs, each a run of its own; no working copies left behind.
    assert len(run_dirs(runs)) == 3
    assert not [p for p in runs.iterdir() if p.name.startswith(".repair")]
    # Without --apply the experiment is as it was.
    assert tree_digest(exp) == before
    # The final run's manifest names the experiment, and its staged code is the repaired one.
    m = json.loads((r.run_dir / "manifest.json").read_text())
    assert m["config"]["expdir"] == str(exp)
    assert "scale = 2" in (r.exp / "main.py").read_text()
    # rerun of the verdict repeats the repaired code, not the experiment's.
    p = labbox("rerun", "--json", "--runs-dir", runs, res["id"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["metrics"]["values"]["accuracy"] == 0.75


def test_apply_copies_the_fix_into_the_experiment(tmp_path):
    exp = write_exp(tmp_path, BUGGY, files={"notes.txt": "old\n", "data/keep.csv": "a\n1\n"})
    fix = script(tmp_path, """
        import os
        src = open("main.py").read().replace("scale = 0", "scale = 3")
        open("main.py", "w").write(src)
        os.remove("notes.txt")
        open("CHANGES.md", "w").write("fixed the scale\\n")
    """)
    r = run_exp(exp, tmp_path / "runs", "--repair-cmd", fix, "--apply")
    assert r.rc == 0, r.why()
    assert r.result["repair"]["applied"] is True
    assert "scale = 3" in (exp / "main.py").read_text()
    assert (exp / "CHANGES.md").read_text() == "fixed the scale\n"
    assert not (exp / "notes.txt").exists()
    assert (exp / "data" / "keep.csv").read_text() == "a\n1\n"


def test_apply_leaves_the_experiment_alone_when_the_loop_gives_up(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    before = tree_digest(exp)
    never = script(tmp_path, 'open("main.py", "a").write("# still broken\\n")\n')
    r = run_exp(exp, tmp_path / "runs", "--repair-cmd", never, "--max-repairs", "1", "--apply")
    assert r.rc == 1, r.why()
    assert r.result["repair"]["applied"] is False and r.result["repair"]["gave_up"] is True
    assert tree_digest(exp) == before


# The first repair points notes.txt elsewhere and adds a link of its own; the second removes
# notes.txt, drops the link to a directory, leaves a dangling link and fixes the bug.
RELINK_IN_EXP = """
import os
n = int(os.environ["LABBOX_REPAIR_ATTEMPT"])
if n == 1:
    os.remove("notes.txt")
    os.symlink(os.environ["OTHER"], "notes.txt")
    os.symlink(os.environ["SECRET"], "added.txt")
    open("main.py", "a").write("# looked at it\\n")
else:
    os.remove("notes.txt")
    os.remove("data")
    os.symlink("/nonexistent/lb-dangling", "dangling")
    src = open("main.py").read().replace("scale = 0", "scale = 2")
    open("main.py", "w").write(src)
"""


def test_the_patches_show_a_link_change_never_what_the_link_reads(tmp_path):
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    secrets = [unique("SECRET-file"), unique("SECRET-other"), unique("SECRET-dir")]
    secret, other, sdir = outside / "secret.txt", outside / "other.txt", outside / "dir"
    secret.write_text(secrets[0] + "\n")
    other.write_text(secrets[1] + "\n")
    (sdir / "inner.txt").write_text(secrets[2] + "\n")
    exp = write_exp(tmp_path, BUGGY)
    (exp / "notes.txt").symlink_to(secret)
    (exp / "data").symlink_to(sdir)
    env = dict(os.environ, SECRET=str(secret), OTHER=str(other))
    r = run_exp(exp, tmp_path / "runs", "--repair-cmd", script(tmp_path, RELINK_IN_EXP), env=env)
    rep = r.run_dir / "repairs"
    patches = sorted(rep.glob("*/diff.patch")) + sorted(rep.glob("all.patch"))
    assert patches, r.why()
    for p in patches:
        for s in secrets:
            assert s not in p.read_text(), p
    # No link ends the loop (a dangling one included): it runs to the fix.
    assert r.rc == 0, r.why()
    assert r.result["repair"]["attempts"] == 2 and r.result["repair"]["fixed"] is True
    d1, d2, whole = ((rep / f).read_text() for f in ("1/diff.patch", "2/diff.patch", "all.patch"))
    # Each link change is in the patches, as the link's target.
    assert f"-symbolic link to {secret}\n+symbolic link to {other}\n" in d1
    assert "+++ b/added.txt" in d1 and f"+symbolic link to {secret}\n" in d1
    assert "+# looked at it" in d1
    assert f"-symbolic link to {other}\n" in d2 and f"-symbolic link to {sdir}\n" in d2
    assert "+symbolic link to /nonexistent/lb-dangling\n" in d2
    assert "-scale = 0" in d2 and "+scale = 2" in d2
    assert f"-symbolic link to {secret}\n" in whole and f"-symbolic link to {sdir}\n" in whole
    assert "+scale = 2" in whole and "+++ b/added.txt" in whole


def test_a_repair_that_never_fixes_it_gives_up_after_n(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    never = script(tmp_path, """
        import os
        n = os.environ["LABBOX_REPAIR_ATTEMPT"]
        open("main.py", "a").write(f"# attempt {n}: still broken\\n")
    """)
    for opts, n in ((("--max-repairs", "2"), 2), ((), 3)):
        runs = tmp_path / f"runs{n}"
        r = run_exp(exp, runs, "--repair-cmd", never, *opts)
        assert r.rc == 1, r.why()  # the last attempt's exit code
        rp = r.result["repair"]
        assert rp["attempts"] == n and rp["max_repairs"] == n
        assert rp["gave_up"] is True and rp["fixed"] is False
        assert f"{n} repairs did not fix the run" in rp["reason"], rp
        assert "division by zero" in rp["reason"]
        assert len(r.result["attempts"]) == n + 1 and len(run_dirs(runs)) == n + 1
        assert sorted(p.name for p in (r.run_dir / "repairs").iterdir()) == \
            sorted([str(i) for i in range(1, n + 1)] + ["all.patch"])
        assert f"+# attempt {n}: still broken" in (r.run_dir / "repairs" / str(n) / "diff.patch").read_text()


def test_a_repair_command_that_crashes_ends_the_loop(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    crash = script(tmp_path, """
        import sys
        print("looking at the verdict")
        sys.stderr.write("repair tool: model quota exhausted\\n")
        sys.exit(7)
    """)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--repair-cmd", crash)
    assert r.rc == 1, r.why()
    rp = r.result["repair"]
    assert rp["attempts"] == 1 and rp["gave_up"] is True
    assert "exited with status 7" in rp["reason"]
    assert rp["repairs"][0]["command_exit_code"] == 7
    assert len(r.result["attempts"]) == 1 and len(run_dirs(runs)) == 1
    log = (r.run_dir / "repairs" / "1" / "cmd.log").read_text()
    assert "looking at the verdict" in log and "model quota exhausted" in log


def test_a_repair_command_that_hangs_is_ended_at_the_budget(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    marker = unique("lb-repair-hang")
    sleeper = f"{PYTHON} -c 'import time; time.sleep(600)' {marker}"
    runs = tmp_path / "runs"
    try:
        r = run_exp(exp, runs, "--budget", "3", "--repair-cmd", f"{sleeper} & {sleeper}")
        assert r.rc == 1, r.why()
        rp = r.result["repair"]
        assert rp["gave_up"] is True and rp["repairs"][0]["timed_out"] is True
        assert "did not finish within 3 s" in rp["reason"]
        assert rp["timeout_s"] == 3.0
        assert r.elapsed < 60
        # The command and the job it started in the background are both gone.
        assert wait_no_marker(marker, 10) == []
    finally:
        kill_marker(marker)


def test_the_shipped_example_repairs_the_shipped_broken_experiment(tmp_path):
    exp = tmp_path / "broken"
    shutil.copytree(REPO / "examples" / "repair" / "broken", exp)
    before = tree_digest(exp)
    fix = f"{PYTHON} {REPO / 'examples' / 'repair' / 'fix.py'}"
    r = run_exp(exp, tmp_path / "runs", "--repair-cmd", fix)
    assert r.rc == 0, r.why()
    first, second = r.result["attempts"]
    assert first["status"] == "rejected" and first["labbox_exit_code"] == 3
    assert second["status"] == "completed"
    assert "mean" in r.result["metrics"]["values"]
    assert "results.json" in r.result["metrics"]["files"]
    patch = (r.run_dir / "repairs" / "1" / "diff.patch").read_text()
    assert "+random.seed(0)" in patch
    assert '-with open("/data/out/results.json", "w") as f:' in patch
    assert '+with open("results.json", "w") as f:' in patch
    assert tree_digest(exp) == before


def test_a_run_that_succeeds_needs_no_repair(tmp_path):
    exp = write_exp(tmp_path, "import random\nrandom.seed(0)\nprint('accuracy: 0.5')\n")
    marker = tmp_path / "ran"
    r = run_exp(exp, tmp_path / "runs", "--repair-cmd", f"touch {marker}")
    assert r.rc == 0, r.why()
    rp = r.result["repair"]
    assert rp["attempts"] == 0 and rp["gave_up"] is False and rp["fixed"] is False
    assert len(r.result["attempts"]) == 1 and not marker.exists()


def test_repair_flags_are_checked(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    for opts, words in ((("--apply",), "--apply applies to the repair loop only"),
                        (("--max-repairs", "2"), "--max-repairs applies to the repair loop only"),
                        (("--repair-cmd", "true", "--max-repairs", "0"), "--max-repairs '0'"),
                        (("--repair-cmd", " "), "--repair-cmd needs a command")):
        r = run_exp(exp, tmp_path / "runs", *opts)
        assert r.rc == 2, r.why()
        assert words in json.dumps(r.result), r.result


# The first repair adds a link to a file outside the copy, the second one removes it and fixes
# the planted bug.
RELINK = """
import os, sys
n = int(os.environ["LABBOX_REPAIR_ATTEMPT"])
if n == 1:
    os.symlink(sys.argv[1], "notes.txt")
    open("README.txt", "w").write("plain text\\n")
else:
    os.remove("notes.txt")
    src = open("main.py").read().replace("scale = 0", "scale = 2")
    open("main.py", "w").write(src)
"""


def test_the_repair_diff_shows_links_as_links_never_their_targets(tmp_path):
    """A repair command (a model, often) that links to a file outside its copy must not get
    the file's content into the patches labbox writes, which a pipeline hands back to it."""
    outside = Path(tempfile.mkdtemp(prefix="labbox-outside-", dir="/tmp"))
    try:
        outside.chmod(0o755)
        secret = outside / "secret.txt"
        secret.write_text("labbox-secret-8c1f2e\n")
        secret.chmod(0o644)
        exp = write_exp(tmp_path, BUGGY)
        r = run_exp(exp, tmp_path / "runs", "--repair-cmd",
                    script(tmp_path, RELINK) + f" {secret}")
        assert r.rc == 0, r.why()
        assert r.result["repair"]["fixed"] is True
        rep = r.run_dir / "repairs"
        d1 = (rep / "1" / "diff.patch").read_text()
        d2 = (rep / "2" / "diff.patch").read_text()
        for text in (d1, d2, (rep / "all.patch").read_text()):
            assert "labbox-secret-8c1f2e" not in text, text
        # The link's own change is recorded, as the path it points to.
        assert f"+symbolic link to {secret}" in d1 and "+plain text" in d1, d1
        assert f"-symbolic link to {secret}" in d2 and "+scale = 2" in d2, d2
    finally:
        shutil.rmtree(outside, ignore_errors=True)


# Starts a process that leaves the command's process group and session (setsid) and a daemon
# (fork, setsid, fork: reparented away from the command at once), both carrying MARKER; then
# sleeps for SLEEP seconds and exits with status 7.
DETACHING = """
import os, subprocess, sys, time
marker, sleep = sys.argv[1], float(sys.argv[2])
sleeper = [sys.executable, "-c", "import time; time.sleep(600)", marker]
subprocess.Popen(["setsid"] + sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, sleeper)
    os._exit(0)
os.wait()
print("started the helpers", flush=True)
time.sleep(sleep)
sys.exit(7)
"""


def test_what_a_repair_command_starts_detached_ends_with_it(tmp_path):
    """A repair command that exits, and one that hangs past --budget: what each started in a
    session of its own, or as a daemon, is gone when labbox returns."""
    exp = write_exp(tmp_path, BUGGY)
    for sleep, timed_out in (("0.5", False), ("100", True)):
        marker = unique("lb-repair-detached")
        cmd = script(tmp_path, DETACHING) + f" {marker} {sleep}"
        runs = tmp_path / f"runs-{sleep}"
        try:
            r = run_exp(exp, runs, "--budget", "3", "--max-repairs", "1", "--repair-cmd", cmd)
            assert r.rc == 1, r.why()
            rp = r.result["repair"]
            assert rp["repairs"][0]["timed_out"] is timed_out, rp
            if timed_out:
                assert "did not finish within 3 s" in rp["reason"], rp
            else:
                assert rp["repairs"][0]["command_exit_code"] == 7, rp
                assert "exited with status 7" in rp["reason"], rp
            assert "started the helpers" in (r.run_dir / "repairs" / "1" / "cmd.log").read_text()
            left = wait_no_marker(marker, 2)
            assert left == [], (f"labbox returned, but what the repair command started "
                                f"detached still runs: {describe_pids(left)}")
        finally:
            kill_marker(marker)


def test_a_repair_commands_tree_ends_when_labbox_is_killed(tmp_path):
    exp = write_exp(tmp_path, BUGGY)
    marker = unique("lb-repair-killed")
    cmd = script(tmp_path, DETACHING) + f" {marker} 100"
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--python", PYTHON, "--runs-dir", str(runs),
                          "--budget", "60", "--max-repairs", "1", "--repair-cmd", cmd,
                          str(exp)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # both helpers and the command itself are up
        assert wait_for(lambda: len(pids_with_marker(marker)) >= 3, 60), \
            "the repair command never started its helpers"
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        left = wait_no_marker(marker, 10)
        assert left == [], (f"labbox was killed during the repair, but what the repair "
                            f"command started still runs: {describe_pids(left)}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        kill_marker(marker)
