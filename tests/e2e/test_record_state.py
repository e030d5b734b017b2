"""labbox's own state (the key that seals the records, the runs directories every run hides)
lives in $XDG_STATE_HOME/labbox, not in the cache: a cache clean-up forgets probes and
verdicts, never whether a record is labbox's. A key an older labbox kept in the cache is
taken over, so the records it sealed still verify."""
import json
import os
import shutil
import stat
from pathlib import Path

from conftest import PYTHON, labbox, write_exp, user_dirs


def a_run(tmp_path, env):
    exp = write_exp(tmp_path, 'print("accuracy: 0.75")\n', yaml="metrics: [accuracy]\n")
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return exp, json.loads(p.stdout)["id"]


def sealed(exp, rid, env):
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["record_sealed"]


def test_deleting_the_cache_leaves_records_sealed(tmp_path):
    env = user_dirs(tmp_path / "cache")
    exp, rid = a_run(tmp_path, env)
    shutil.rmtree(tmp_path / "cache")
    assert sealed(exp, rid, env) is True
    p = labbox("runs", "list", cwd=exp, env=env)
    assert p.returncode == 0 and " yes " in p.stdout, p.stdout
    p = labbox("report", "--format", "md", rid, cwd=exp, env=env)
    assert p.returncode == 0 and "0.75" in p.stdout, p.stderr


def test_a_key_an_older_labbox_kept_in_the_cache_still_verifies(tmp_path):
    """As an older labbox left it: the key in the cache, no state directory."""
    env = user_dirs(tmp_path / "cache")
    exp, rid = a_run(tmp_path, env)
    state = tmp_path / "cache-state" / "labbox"
    old = tmp_path / "cache" / "labbox"
    key = (state / "record.key").read_bytes()
    shutil.move(state / "record.key", old / "record.key")
    shutil.move(state / "runs-dirs", old / "runs-dirs")
    shutil.rmtree(tmp_path / "cache-state")
    assert sealed(exp, rid, env) is True
    # taken over as it was, private
    assert (state / "record.key").read_bytes() == key
    assert stat.S_IMODE((state / "record.key").stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    # and from then on a cache clean-up forgets nothing
    shutil.rmtree(tmp_path / "cache")
    assert sealed(exp, rid, env) is True
    exp2, rid2 = a_run(tmp_path / "again", env)
    assert sealed(exp2, rid2, env) is True and sealed(exp, rid, env) is True


def test_a_key_others_could_read_is_not_taken_over(tmp_path):
    """Only a key this user's labbox wrote (0600) is taken over: one others could read seals
    nothing, before or after."""
    env = user_dirs(tmp_path / "cache")
    exp, rid = a_run(tmp_path, env)
    state = tmp_path / "cache-state" / "labbox"
    old = tmp_path / "cache" / "labbox"
    shutil.move(state / "record.key", old / "record.key")
    shutil.rmtree(tmp_path / "cache-state")
    os.chmod(old / "record.key", 0o644)
    assert sealed(exp, rid, env) is False
    assert not (state / "record.key").exists() or \
        (state / "record.key").read_bytes() != (old / "record.key").read_bytes()


def test_no_state_directory_still_runs(tmp_path):
    """Without XDG_STATE_HOME or HOME there is nowhere to keep a key: the run is made and
    says it is not sealed, as before without a cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")}
    exp = write_exp(tmp_path, 'print("accuracy: 0.75")\n', yaml="metrics: [accuracy]\n")
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
