"""The manifest's git record is read by git in a sandbox of its own, and an experiment's
repository (its .git file, its filters) must get no more from it than the run gets. Checked
from the host's side, as root and (run-as-user) as an ordinary user."""
import json
import os
import subprocess
from pathlib import Path

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT, run_dirs, token

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo, *a):
    return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True,
                          text=True, env=GIT_ENV).stdout.strip()


def commit_all(repo):
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    return git(repo, "rev-parse", "HEAD")


def labbox_run(exp, *opts, cwd=None):
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, *map(str, opts), str(exp)],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT, cwd=cwd)
    return p, json.loads(p.stdout) if p.stdout.startswith("{") else None


def everything_under(d: Path) -> str:
    out = []
    for p in sorted(d.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out.append(p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def test_a_git_file_naming_a_host_repository_is_not_followed(tmp_path):
    """An experiment's own .git file naming a repository elsewhere on the host (one the run
    cannot see: under /tmp, private to each sandbox) would have git diff that repository's
    files against the experiment, their whole text into the manifest."""
    secret = tmp_path / "secret"
    secret.mkdir()
    tok = token()
    (secret / "creds.txt").write_text(f"{tok}\n")
    commit_all(secret)
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('print("accuracy: 0.5")\n')
    (exp / ".git").write_text(f"gitdir: {secret}/.git\n")
    runs = tmp_path / "runs"
    p, doc = labbox_run(exp, "--runs-dir", runs)
    assert p.returncode == 0, p.stderr
    (rd,) = run_dirs(runs)
    assert tok not in everything_under(rd)
    man = json.loads((rd / "manifest.json").read_text())
    assert man["git"]["commit"] is None and "not followed" in man["git"]["error"], man["git"]


def test_a_worktree_of_the_users_repository_is_still_recorded(tmp_path):
    """A real worktree (its .git file names a git directory that names it back) is followed:
    the commit it has checked out is recorded."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "main.py").write_text('print("accuracy: 0.5")\n')
    head = commit_all(repo)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    p, doc = labbox_run(wt, "--runs-dir", tmp_path / "runs")
    assert p.returncode == 0, p.stderr
    (rd,) = run_dirs(tmp_path / "runs")
    man = json.loads((rd / "manifest.json").read_text())
    assert man["git"]["commit"] == head and man["git"]["dirty"] is False, man["git"]


def test_the_experiments_git_filters_see_no_other_runs(tmp_path):
    """An experiment that ships its own repository chooses the filters git runs on its files.
    Run from inside the experiment (records in exp/.labbox), an earlier run's manifest (its
    -e values) lies in the tree git reads: the filter must not see it, as the run does not."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('print("accuracy: 0.5")\n')
    (exp / "data.txt").write_text("v0\n")
    commit_all(exp)
    (exp / ".gitattributes").write_text("data.txt filter=peek\n")
    git(exp, "config", "filter.peek.clean",
        "sh -c 'echo FILTER-RAN; cat .labbox/runs/*/manifest.json 2>&1; cat'")
    (exp / "data.txt").write_text("v1\n")
    tok = token()
    p, _ = labbox_run(".", "-e", f"PEEK_TOKEN={tok}", cwd=exp)
    assert p.returncode == 0, p.stderr
    p, doc = labbox_run(".", cwd=exp)
    assert p.returncode == 0, p.stderr
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    diff = (man.get("git_diff") or {}).get("diff", "")
    assert "FILTER-RAN" in diff, man  # the filter ran, in git's sandbox
    assert tok not in diff and tok not in json.dumps(man["git"]), diff


def test_the_experiments_git_filters_are_held_to_the_runs_limits(tmp_path):
    """A filter is code the experiment chose, run while the experiment runs: the run's
    --pids-limit holds for it as for the experiment."""
    from escape_lib import limit_opts
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('print("accuracy: 0.5")\n')
    (exp / "probe.txt").write_text("v0\n")
    (exp / "spawn.dat").write_text(
        "import os, sys, time\n"
        "sys.stdout.write(sys.stdin.read())\n"
        "n = 0\n"
        "try:\n"
        "    for i in range(200):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(1); os._exit(0)\n"
        "        n += 1\n"
        "except OSError:\n"
        "    pass\n"
        "print(f'FORKED {n}')\n")
    commit_all(exp)
    (exp / ".gitattributes").write_text("*.txt filter=spawn\n")
    git(exp, "config", "filter.spawn.clean", f"{PYTHON} spawn.dat")
    (exp / "probe.txt").write_text("v1\n")
    p, doc = labbox_run(exp, "--runs-dir", tmp_path / "runs",
                        *limit_opts("pids", "--pids-limit", 32))
    assert p.returncode == 0, p.stderr
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    diff = (man.get("git_diff") or {}).get("diff", "")
    forked = [int(line.split()[1]) for line in diff.splitlines() if line.startswith("+FORKED ")]
    assert forked and forked[0] < 32, diff
