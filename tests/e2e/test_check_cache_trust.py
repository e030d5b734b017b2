"""A warm `labbox check` does not read files whose metadata (device, inode, size, mode, mtime,
ctime) matches the cache's file table, as git's index does (docs/check.md, "Results kept
between checks"). Checked from the outside: `unread_files` says how many were answered so,
and every change a user can make (an edit with the mtime put back, a rename over the file, a
new file, a deleted one, a damaged cache) gives the answer a check without the cache gives."""
import json
import os
import shutil
import time
from pathlib import Path

from conftest import labbox, write_exp, user_dirs

REPO = Path(__file__).resolve().parents[2]
MAIN = "import os\nimport helper\nprint(f'accuracy: {helper.score()}')\n"
HELPER = "def score():\n    return 0.5\n"
# the file table trusts only timestamps older than its stamp by more than 1-2 s
SETTLE = 2.2


def cache_env(tmp_path):
    return user_dirs(tmp_path / "xdg")


def pack_of(tmp_path):
    d = tmp_path / "xdg" / "labbox" / "check"
    [p] = [p for p in d.iterdir() if p.is_file() and not p.name.startswith(".")]
    return p


def check(env, *args, rc=(0, 3)):
    p = labbox("check", "--json", *map(str, args), env=env)
    assert p.returncode in rc, p.stderr
    return json.loads(p.stdout)


def answer(doc):
    """What a user reads: the document without the cache's own counts."""
    doc = dict(doc)
    doc.pop("cached_files")
    doc.pop("unread_files")
    return doc


def settled(env, exp):
    """A check after the files are old enough to be trusted, then one that trusts them."""
    time.sleep(SETTLE)
    check(env, exp)
    time.sleep(SETTLE)
    return check(env, exp)


def same_size_edit(path, old, new):
    """Replace old by new (same length) and put the mtime back, as `touch -d` would."""
    st = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_unchanged_files_are_not_read(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "os.system('ls')\n", files={"helper.py": HELPER})
    ref = check(env, "--no-cache", exp)
    assert ref["unread_files"] == 0
    warm = settled(env, exp)
    assert warm["cached_files"] == 2 and warm["unread_files"] == 2
    assert answer(warm) == answer(ref)
    assert "LB101" in {f["id"] for f in warm["findings"]}


def test_just_written_files_are_read_again(tmp_path):
    """Racy: a file whose timestamps are not older than the table's stamp could have been
    changed after it was hashed without any field changing; it is hashed again."""
    env = cache_env(tmp_path)
    # the interpreter's library summaries made first, so that the checks follow the write
    check(env, write_exp(tmp_path, MAIN, name="other"))
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    check(env, exp)
    again = check(env, exp)
    assert again["cached_files"] == 2 and again["unread_files"] == 0


def test_same_size_edit_with_mtime_put_back_is_seen(tmp_path):
    """The ctime changes with any write and cannot be set back: the file is read again."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": "import os\nos.getcwd('x')\n" + HELPER})
    assert settled(env, exp)["unread_files"] == 2
    same_size_edit(exp / "helper.py", "os.getcwd", "os.system")
    doc = check(env, exp)
    assert doc["unread_files"] == 1 and doc["cached_files"] == 1
    assert [f["id"] for f in doc["findings"] if f["file"] == "helper.py"] == ["LB101"]
    assert answer(doc) == answer(check(env, "--no-cache", exp))


def test_a_file_renamed_over_is_seen(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": "import os\nos.getcwd('x')\n" + HELPER})
    assert settled(env, exp)["unread_files"] == 2
    st = (exp / "helper.py").stat()
    new = tmp_path / "new.py"
    new.write_text((exp / "helper.py").read_text().replace("os.getcwd", "os.system"))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.rename(new, exp / "helper.py")
    doc = check(env, exp)
    assert doc["unread_files"] == 1
    assert [f["id"] for f in doc["findings"] if f["file"] == "helper.py"] == ["LB101"]
    assert answer(doc) == answer(check(env, "--no-cache", exp))


def test_new_and_deleted_files_change_the_cross_file_facts(tmp_path):
    """main.py is unchanged (and trusted by its metadata), but whether `helper` is one of the
    experiment's own modules is a fact about the other files."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    assert settled(env, exp)["unread_files"] == 2
    (exp / "helper.py").unlink()
    gone = check(env, exp)
    lb201 = [(f["file"], f["name"]) for f in gone["findings"] if f["id"] == "LB201"]
    assert lb201 == [("main.py", "helper")], gone["findings"]
    assert answer(gone) == answer(check(env, "--no-cache", exp))
    # a new file brings the module back
    (exp / "helper").mkdir()
    (exp / "helper" / "__init__.py").write_text(HELPER)
    back = check(env, exp)
    assert not [f for f in back["findings"] if f["id"] == "LB201"]
    assert back["files"] == 2
    assert answer(back) == answer(check(env, "--no-cache", exp))


def test_a_damaged_file_table_trusts_nothing(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "eval('1')\n", files={"helper.py": HELPER})
    ref = check(env, "--no-cache", exp)
    assert settled(env, exp)["unread_files"] == 2
    pack = pack_of(tmp_path)
    data = pack.read_bytes()
    at = data.index(b"helper.py")
    # a changed byte of the table: its checksum fails
    pack.write_bytes(data[:at] + b"H" + data[at + 1:])
    doc = check(env, exp)
    assert doc["unread_files"] == 0 and doc["cached_files"] == 2 and answer(doc) == answer(ref)
    # written again: trusted from the next check on
    assert check(env, exp)["unread_files"] == 2
    # cut inside the table
    data = pack.read_bytes()
    pack.write_bytes(data[:data.index(b"helper.py")])
    doc = check(env, exp)
    assert doc["unread_files"] == 0 and doc["cached_files"] == 0 and answer(doc) == answer(ref)
    assert check(env, exp)["unread_files"] == 2
    # emptied
    pack.write_bytes(b"")
    doc = check(env, exp)
    assert doc["unread_files"] == 0 and answer(doc) == answer(ref)


def test_warm_answer_is_the_uncached_answer_over_a_corpus(tmp_path):
    """The check's own corpus (evasions, traps, research templates) and the examples: the
    warm, metadata-trusted answer is, byte for byte, the uncached one."""
    env = cache_env(tmp_path)
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "tests" / "check", tree / "check")
    shutil.copytree(REPO / "examples", tree / "examples")
    (tree / "main.py").write_text("print(1)\n")  # a directory run would start
    nfiles = sum(1 for _ in tree.rglob("*.py"))
    assert nfiles > 100
    ref = labbox("check", "--json", "--no-cache", "--policy", "permissive", tree, env=env)
    check(env, "--policy", "permissive", tree)
    time.sleep(SETTLE)
    check(env, "--policy", "permissive", tree)
    time.sleep(SETTLE)
    warm = labbox("check", "--json", "--policy", "permissive", tree, env=env)
    assert ref.returncode == warm.returncode
    a, b = json.loads(ref.stdout), json.loads(warm.stdout)
    assert b["unread_files"] == b["cached_files"] == b["files"] == nfiles
    assert answer(a) == answer(b)
    assert len(a["findings"]) > 100
    # the text report too
    t1 = labbox("check", "--no-cache", "--policy", "permissive", tree, env=env)
    t2 = labbox("check", "--policy", "permissive", tree, env=env)
    assert t1.stdout == t2.stdout
