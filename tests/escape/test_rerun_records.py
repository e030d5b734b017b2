"""`labbox rerun` of a record that came with an experiment (a `.labbox/` in an archive or a
checkout, made under another user's key, so not sealed by this user's labbox) repeats it from
what the record says. Whatever paths the record names, the rerun makes nothing outside its own
run, reads no host directory the record chose and no repository above one. Checked from the
host's side, as root and (run-as-user) as an ordinary user."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT, run_dirs, token, user_dirs

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo, *a):
    return subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True,
                          text=True, env=GIT_ENV).stdout.strip()


def run(*args, env, cwd):
    p = subprocess.run([LABBOX, *map(str, args)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT, env=env, cwd=cwd)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p, doc


def shipped_record(tmp_path, edit):
    """An experiment with a record made by another user's labbox (another cache, so another
    key), its manifest then edited by edit(manifest, run_dir); the victim's cache env."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('print("accuracy: 0.5")\n')
    other = user_dirs(tmp_path / "other-cache")
    mine = user_dirs(tmp_path / "my-cache")
    p, doc = run("run", "--json", "--python", PYTHON, ".", env=other, cwd=exp)
    assert p.returncode == 0 and doc["status"] == "completed", p.stderr
    rd = Path(doc["run_dir"])
    man = rd / "manifest.json"
    m = json.loads(man.read_text())
    # No grant for the interpreter: the rerun would go ahead without asking.
    m["interpreter"]["named_by"] = "labbox.yaml"
    edit(m, rd)
    man.write_text(json.dumps(m, indent=2))
    return exp, doc["id"], mine


@pytest.mark.parametrize("spelling", ["dotdot", "absolute", "dotdot_inside"])
def test_a_records_file_names_make_nothing_outside_the_rerun(tmp_path, spelling):
    """A link the record lists under `../../HOST/planted` (or an absolute name) was made by
    the copy from the staged files at that host path, with the target the record chose and
    every missing directory on the way. The rerun is refused (exit 2), naming the file, and
    nothing appears on the host."""
    host = tmp_path / "host"
    host.mkdir()
    planted = host / "made" / "planted"
    names = {"dotdot": None, "absolute": str(planted),
             "dotdot_inside": "sub/../inside"}

    def edit(m, rd):
        if spelling == "dotdot":
            # From the rebuilt copy (/tmp/labbox-rerun-XXXXXX) up to /tmp and down to the
            # host; in the record, from exp/ up to its run directory.
            rel = "../" + os.path.relpath(planted, "/tmp")
        else:
            rel = names[spelling]
        m["files"][rel] = "symlink"
        m["config"]["expdir"] = str(tmp_path / "nowhere")  # the copy comes from the stage
        link = Path(os.path.normpath(str(rd / "exp") + "/" + rel)) if not rel.startswith("/") \
            else Path(str(rd / "exp") + rel)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to("/ATTACKER/CHOSEN/TARGET")

    exp, rid, mine = shipped_record(tmp_path, edit)
    p, doc = run("rerun", "--json", rid, env=mine, cwd=exp)
    assert not planted.is_symlink() and not (host / "made").exists(), p.stdout
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert doc["schema"] == "labbox.error/1" and "not a plain relative path" in \
        doc["error"]["message"], doc
    assert len(run_dirs(exp / ".labbox" / "runs")) == 1  # nothing ran
    # Accepting the record's grants accepts no such name either.
    p, doc = run("rerun", "--json", "--accept-grants", rid, env=mine, cwd=exp)
    assert p.returncode == 2 and not (host / "made").exists(), (p.stdout, p.stderr)


def test_a_link_in_the_staged_copy_is_copied_as_a_link_beneath_the_rerun(tmp_path):
    """A plain name whose staged entry is a link is made as that link inside the rerun's copy
    and judged there as staging judges any experiment's link: the rerun runs and the host
    directory the link names is unchanged."""
    host = tmp_path / "host"
    host.mkdir()

    def edit(m, rd):
        m["files"]["data"] = "symlink"
        m["config"]["expdir"] = str(tmp_path / "nowhere")
        (rd / "exp" / "data").symlink_to(host)

    exp, rid, mine = shipped_record(tmp_path, edit)
    p, doc = run("rerun", "--json", rid, env=mine, cwd=exp)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert doc["rerun"]["source"] == "staged copy", doc["rerun"]
    new = Path(doc["run_dir"]) / "exp" / "data"
    assert new.is_symlink() and os.readlink(new) == str(host)
    assert list(host.iterdir()) == []


def private_repository(tmp_path):
    """A repository under /tmp (hidden from every sandbox) with a committed file and an
    uncommitted change, each holding a token of its own."""
    repo = tmp_path / "private"
    (repo / "src").mkdir(parents=True)
    committed, changed = token(), token()
    (repo / "src" / "secret.txt").write_text(f"{committed}\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "x")
    (repo / "src" / "secret.txt").write_text(f"{committed}\n{changed}\n")
    return repo, (committed, changed)


def everything_under(d: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace")
                     for p in sorted(d.rglob("*")) if p.is_file() and not p.is_symlink())


@pytest.mark.parametrize("via", ["git_file_above", "repository_above", "repository_itself"])
def test_a_records_experiment_directory_shows_no_host_repository(tmp_path, via):
    """The record's config.expdir named a directory below a `.git` file naming a private
    repository (or inside that repository): git's record of the rerun read it, and the
    repository's files went whole into the new manifest. Not sealed, the record's directory
    is not read at all (the staged copy runs); accepted, a repository above it is not
    followed, and one at it only as an experiment's own .git file would be."""
    repo, toks = private_repository(tmp_path)
    if via == "git_file_above":
        origin = tmp_path / "x" / "src"
        origin.mkdir(parents=True)
        (tmp_path / "x" / ".git").write_text(f"gitdir: {repo}/.git\n")
    elif via == "repository_above":
        origin = repo / "src"
    else:
        origin = tmp_path / "wt"
        origin.mkdir()
        (origin / ".git").write_text(f"gitdir: {repo}/.git\n")
        (origin / "main.py").write_text('print("accuracy: 0.5")\n')

    def edit(m, rd):
        m["config"]["expdir"] = str(origin)

    exp, rid, mine = shipped_record(tmp_path, edit)
    runs = exp / ".labbox" / "runs"
    p, doc = run("rerun", "--json", rid, env=mine, cwd=exp)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert doc["rerun"]["source"] == "staged copy", doc["rerun"]
    assert doc["rerun"]["inputs"]["expdir_read"] is False, doc["rerun"]
    new = Path(doc["run_dir"])
    assert not any(t in everything_under(new) for t in toks)
    assert json.loads((new / "manifest.json").read_text())["config"]["expdir"] != str(origin)

    p, doc = run("rerun", "--json", "--accept-grants", rid, env=mine, cwd=exp)
    assert p.returncode == 0, (p.stdout, p.stderr)
    new = Path(doc["run_dir"])
    assert not any(t in everything_under(new) for t in toks)
    man = json.loads((new / "manifest.json").read_text())
    assert man["git"]["commit"] is None and "not followed" in man["git"]["error"], man["git"]
    assert len(run_dirs(runs)) == 3


def test_the_users_own_rerun_still_reads_its_experiment_directory(tmp_path):
    """The user's own (sealed) record is repeated from its experiment directory as before."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('print("accuracy: 0.5")\n')
    mine = user_dirs(tmp_path / "my-cache")
    p, doc = run("run", "--json", "--python", PYTHON, ".", env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    p, again = run("rerun", "--json", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert again["rerun"]["source"] == "expdir" and again["rerun"]["inputs"]["expdir_read"]
    assert again["rerun"]["record_sealed"] is True
