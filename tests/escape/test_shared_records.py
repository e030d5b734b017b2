"""The records labbox reads back and believes are the user's own: the run index beside the
runs directory, the sweeps kept there, and the runs directory itself. Another user's file or
directory in their place (a runs directory under /tmp puts the index in /tmp), or one others
could write, is refused by name; nothing of this user's run goes into it and nothing of it is
believed. As root the other user is nobody; as an ordinary user (run-as-user), who cannot make
another user's files, the same places are made writable by others instead."""
import json
import os
import sqlite3
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from escape_lib import IS_ROOT, LABBOX, PYTHON, CALL_TIMEOUT


def labbox(*args):
    p = subprocess.run([LABBOX, *map(str, args)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p, doc


def exp_dir(tmp_path, main='print("accuracy: 0.5")\n'):
    d = tmp_path / "exp"
    d.mkdir(exist_ok=True)
    (d / "main.py").write_text(main)
    return d


@pytest.fixture
def shared():
    """A directory like /tmp: anyone may create in it, nobody may replace another's entry
    (outside pytest's own 0700 directories, so that the other user reaches it)."""
    d = Path(tempfile.mkdtemp(prefix="labbox-shared-", dir="/tmp"))
    d.chmod(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def as_other(*cmd):
    """cmd as another user (root: nobody); as an ordinary user, as this one (the place is
    then made writable by others, which is the same exposure)."""
    if IS_ROOT:
        cmd = ("runuser", "-u", "nobody", "--", *cmd)
    subprocess.run(cmd, check=True, timeout=60)


def plant_db(path: Path):
    as_other(PYTHON, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
             "c.execute('create table planted(x)'); c.commit()", str(path))
    if not IS_ROOT:
        path.chmod(0o666)
    else:
        as_other("chmod", "666", str(path))


def run_in_shared(tmp_path, shared):
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", shared / "runs",
                    exp_dir(tmp_path))
    assert p.returncode == 0, p.stderr
    assert doc["status"] == "completed"
    return doc


def test_beside_a_runs_directory_in_a_shared_directory_nothing_is_read(tmp_path, shared):
    # Another user's index where the records would sit beside the runs (/tmp/labbox.db):
    # in a directory others can write, the records move into the user's own runs directory.
    plant_db(shared / "labbox.db")
    before = (shared / "labbox.db").read_bytes()
    doc = run_in_shared(tmp_path, shared)
    assert doc["index"]["error"] is None, doc["index"]
    assert doc["index"]["path"] == str(shared / "runs" / "labbox.db"), doc["index"]
    # Nothing of the run in the planted file, read from the host's side.
    assert (shared / "labbox.db").read_bytes() == before
    names = [r[0] for r in sqlite3.connect(shared / "labbox.db").execute(
        "select name from sqlite_master")]
    assert names == ["planted"], names
    p, rows = labbox("runs", "list", "--json", "--runs-dir", shared / "runs")
    assert p.returncode == 0, p.stdout
    assert [r["id"] for r in rows["runs"]] == [doc["id"]], rows


@pytest.mark.parametrize("side", ["-wal", "-journal", "-shm"])
def test_a_planted_side_file_is_never_read_into_the_index(tmp_path, shared, side):
    # A hot journal or WAL planted beside where the index would be is never rolled into it:
    # SQLite looks for these names before any check of labbox's could refuse them.
    first = run_in_shared(tmp_path, shared)
    src = Path(first["index"]["path"])
    planted = shared / ("labbox.db" + side)
    as_other("sh", "-c", f"printf 'planted frames' > '{planted}'")
    if not IS_ROOT:
        planted.chmod(0o666)
    else:
        as_other("chmod", "666", str(planted))
    doc = run_in_shared(tmp_path, shared)
    assert doc["index"]["error"] is None and doc["index"]["path"] == str(src), doc["index"]
    assert planted.read_bytes() == b"planted frames"
    assert not (shared / "labbox.db").exists()
    ids = {r[0] for r in sqlite3.connect(src).execute("select id from runs")}
    assert ids == {first["id"], doc["id"]}, ids


def test_a_symlink_in_the_index_place_is_refused(tmp_path):
    base = tmp_path / "proj"
    base.mkdir()
    elsewhere = tmp_path / "elsewhere.db"
    (base / "labbox.db").symlink_to(elsewhere)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", base / "runs",
                    exp_dir(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "a symbolic link" in doc["index"]["error"], doc["index"]
    assert not elsewhere.exists()


def test_another_users_sweeps_directory_in_a_shared_directory_is_never_used(tmp_path, shared):
    base = shared
    as_other("mkdir", "-m", "777", str(base / "sweeps"))
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", base / "runs",
                    "--seeds", "0-1", exp_dir(tmp_path))
    assert p.returncode == 0, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    assert list((base / "sweeps").iterdir()) == []
    assert (base / "runs" / "sweeps" / doc["id"] / "sweep.json").exists()
    assert not (base / "labbox.db").exists()


def test_a_sweep_document_others_could_change_is_not_resumed(tmp_path):
    base = tmp_path / "proj"
    base.mkdir()
    exp = exp_dir(tmp_path, 'import time\nprint("accuracy: 0.5")\n')
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", base / "runs",
                    "--seeds", "0-1", exp)
    assert p.returncode == 0, p.stderr
    sid = doc["id"]
    sj = base / "sweeps" / sid / "sweep.json"
    forged = json.loads(sj.read_text())
    forged["invocation"]["expdir"] = str(tmp_path / "theirs")
    sj.write_text(json.dumps(forged))
    sj.chmod(0o666)
    if IS_ROOT:
        os.chown(sj, 65534, 65534)
    nruns = len(list((base / "runs").iterdir()))
    p, doc = labbox("sweep", "--json", "--resume", sid, "--runs-dir", base / "runs")
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    assert "sweep.json" in doc["error"]["message"], doc["error"]
    assert len(list((base / "runs").iterdir())) == nruns


def test_a_runs_directory_others_can_write_is_refused(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    runs.chmod(0o777)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp_dir(tmp_path))
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:])
    assert "writable by others" in doc["error"]["message"] and str(runs) in doc["error"]["message"]
    assert list(runs.iterdir()) == []
    # Shared the way /tmp is (sticky: nobody replaces another's entry), it is used.
    runs.chmod(0o1777)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp_dir(tmp_path))
    assert p.returncode == 0, p.stderr
    assert doc["status"] == "completed"


def test_a_sweep_refuses_a_runs_directory_others_can_write_even_with_nothing_to_run(tmp_path):
    """A sweep whose cells have all finished makes no run, so the run's own refusal never
    comes: the sweep refuses the runs directory itself before reusing anything in it."""
    runs = tmp_path / "proj" / "runs"
    exp = exp_dir(tmp_path)
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0", exp)
    assert p.returncode == 0 and doc["counts"]["completed"] == 1, p.stderr
    runs.chmod(0o777)
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0", exp)
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:])
    assert "writable by others" in doc["error"]["message"], doc["error"]


def test_a_runs_directory_in_a_directory_others_can_write_is_refused(tmp_path):
    """The runs directory is the user's own and closed, but the directory it is in is open
    to others: they could rename the runs away and put a link in their place, and every
    record, and the staged code, would be written where the link points. A run and a sweep
    are refused naming that directory, and nothing is made in it."""
    top = tmp_path / "open"
    runs = top / "runs"
    runs.mkdir(parents=True)
    top.chmod(0o777)
    exp = exp_dir(tmp_path)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    msg = doc["error"]["message"]
    assert f"{top} is writable by others" in msg and "mode 0777" in msg, msg
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0",
                    exp)
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    assert f"{top} is writable by others" in doc["error"]["message"], doc["error"]
    assert list(runs.iterdir()) == [] and sorted(x.name for x in top.iterdir()) == ["runs"]
    # closed again, the same runs directory is used
    top.chmod(0o755)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 0 and doc["status"] == "completed", p.stderr[-1000:]


@pytest.mark.skipif(not IS_ROOT, reason="needs another user's directory: made as root")
@pytest.mark.parametrize("where", ["theirs", "below-theirs"])
def test_root_makes_no_runs_in_another_users_directory(tmp_path, shared, where):
    """root's labbox writes every record by path: a runs directory another user owns (their
    own 0700 directory in /tmp), or one below a directory of theirs (a checkout of theirs
    that root runs in), lets that user swap the run for a link and send root's writes into
    any directory. Refused naming their directory and its owner; nothing is written."""
    theirs = shared / "theirs"
    as_other("mkdir", "-m", "700" if where == "theirs" else "755", str(theirs))
    runs = theirs if where == "theirs" else theirs / "project" / "runs"
    if where != "theirs":
        as_other("mkdir", str(theirs / "project"))
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp_dir(tmp_path))
    assert p.returncode == 2, (p.returncode, p.stdout[-1000:], p.stderr[-1000:])
    msg = doc["error"]["message"]
    assert f"{theirs} is owned by nobody (uid 65534)" in msg, msg
    made = sorted(str(x.relative_to(theirs)) for x in theirs.rglob("*"))
    assert made == ([] if where == "theirs" else ["project"]), made
    p, doc = labbox("sweep", "--json", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0",
                    exp_dir(tmp_path))
    assert p.returncode == 2 and "owned by nobody" in doc["error"]["message"], p.stdout[-1000:]
    made = sorted(str(x.relative_to(theirs)) for x in theirs.rglob("*"))
    assert made == ([] if where == "theirs" else ["project"]), made


@pytest.mark.skipif(not IS_ROOT, reason="needs a link another user owns: made as root")
def test_a_runs_directory_reached_through_another_users_link_is_refused(tmp_path, shared):
    """--runs-dir /tmp/NAME where another user made NAME a link to a directory of root's: the
    directories the link resolves to pass, but its owner may point it elsewhere between the
    check and the writes (a link flipped in a loop won within a few dozen runs). A link of
    another user's on the way is refused, naming it, and nothing is made where it points; a
    link of the user's own in the same place is followed."""
    mine = tmp_path / "mine"
    mine.mkdir()
    link = shared / "runs-link"
    as_other("ln", "-s", str(mine), str(link))
    exp = exp_dir(tmp_path)
    for cmd in (["run"], ["sweep", "--seeds", "0"]):
        p, doc = labbox(*cmd, "--json", "--python", PYTHON, "--runs-dir", link / "runs", exp)
        assert p.returncode == 2, (cmd, p.returncode, p.stdout[-1000:], p.stderr[-1000:])
        msg = doc["error"]["message"]
        assert f"{link} is a symbolic link owned by uid 65534" in msg, msg
        assert list(mine.iterdir()) == [], list(mine.iterdir())
    os.unlink(link)
    os.symlink(mine, link)
    p, doc = labbox("run", "--json", "--python", PYTHON, "--runs-dir", link / "runs", exp)
    assert p.returncode == 0 and doc["status"] == "completed", p.stderr[-1000:]
    assert (mine / "runs" / doc["id"] / "result.json").is_file()


@pytest.fixture
def group_shared():
    """A project folder its group may write, outside /tmp (which the sandbox replaces): where
    labbox reached by a group-writable folder keeps the records inside the runs."""
    if not IS_ROOT:
        pytest.skip("needs a folder outside /tmp that the sandbox shows: made as root")
    d = Path(tempfile.mkdtemp(prefix="labbox-group-", dir="/var/lib"))
    # sticky: labbox makes no runs where its group could move them away
    d.chmod(0o3775)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_records_left_beside_by_an_earlier_labbox_are_hidden_from_the_experiment(tmp_path,
                                                                                 group_shared):
    # An earlier labbox kept this user's index and sweeps beside the runs in a folder its
    # group may write; the records now live inside the runs, and the old ones must stay out
    # of the sandbox all the same.
    shared = group_shared
    con = sqlite3.connect(shared / "labbox.db")
    con.execute("create table runs(id)")
    con.execute("insert into runs values ('old-run-secret-5d1e')")
    con.commit()
    con.close()
    (shared / "sweeps").mkdir(mode=0o700)
    (shared / "sweeps" / "sweep.json").write_text('{"secret": "old-sweep-secret-77ab"}')
    main = f'''
import os
seen = []
for p in ({str(shared / "labbox.db")!r}, {str(shared / "sweeps" / "sweep.json")!r}):
    try:
        seen.append(open(p, "rb").read())
    except OSError:
        pass
print("leaked:", int(any(b"secret" in s for s in seen)))
'''
    p, doc = labbox("run", "--json", "--python", PYTHON, "--policy", "permissive",
                    "--runs-dir", shared / "runs", exp_dir(tmp_path, main))
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    assert doc["metrics"]["values"]["leaked"] == 0, doc["metrics"]
