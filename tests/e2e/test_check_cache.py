"""`labbox check` keeps each file's findings in the user's cache (XDG_CACHE_HOME/labbox/check),
named by the file's bytes and everything else that decides them. Checked from the outside: an
answer from the cache is the answer a fresh analysis gives, any change that matters is never
answered from it, and an entry labbox did not write (damaged, someone else's, inside the
experiment) is never believed."""
import json
import os
import stat
import subprocess
from pathlib import Path

from conftest import LABBOX, labbox, run_exp, write_exp, user_dirs

MAIN = """\
import os
import random
import helper
random.seed(1)
print("TIME_ESTIMATE: 1")
print(f"accuracy: {helper.score()}")
"""
HELPER = "def score():\n    return 0.5\n"


def cache_env(tmp_path):
    return user_dirs(tmp_path / "xdg")


def entries_dir(tmp_path):
    return tmp_path / "xdg" / "labbox" / "check"


def packs(tmp_path):
    """The pack files: one per experiment and configuration, each holding the entries of the
    files its last check saw (docs/check.md, "Results kept between checks")."""
    d = entries_dir(tmp_path)
    return sorted(p for p in d.iterdir() if p.is_file() and not p.name.startswith(".")) if d.is_dir() else []


MAGIC = b"labbox.check-pack/2\n"
TABLE = b"labbox.check-files/1\n"


def blocks(data):
    out, at = [], len(MAGIC)
    while at < len(data):
        nl = data.index(b"\n", at)
        n = int(data[at:nl])
        out.append(data[nl + 1:nl + 1 + n])
        at = nl + 1 + n
    return out


def read_pack(path):
    """The entries: the blocks after the file table (test_check_cache_trust.py tests it)."""
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    bs = blocks(data)
    assert bs[0].startswith(TABLE)
    return bs[1:]


def table_len(path):
    t = blocks(path.read_bytes())[0]
    return len(b"%d\n" % len(t)) + len(t)


def write_pack(path, entries):
    """Entries without a table: nothing is trusted by its metadata, every file is hashed."""
    path.write_bytes(MAGIC + b"".join(b"%d\n%s" % (len(e), e) for e in entries))


def check(env, *args, rc=(0, 3)):
    p = labbox("check", "--json", *map(str, args), env=env)
    assert p.returncode in rc, p.stderr
    return json.loads(p.stdout)


def same(a, b):
    """The documents without the count of cached files: everything a user reads."""
    a, b = dict(a), dict(b)
    for k in ("cached_files", "unread_files"):
        a.pop(k)
        b.pop(k)
    return a == b


def test_a_hit_is_the_same_document_as_a_miss(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "import shutil\n"
                    "shutil.rmtree('out')  # labbox: allow[LB108] cleans its own output\n"
                    "os.system('ls')\neval('1')\n",
                    files={"helper.py": HELPER, "pkg/__init__.py": "", "pkg/io.py":
                           "import pickle\nopen('/etc/x', 'w')\n"})
    fresh = check(env, "--no-cache", exp)
    assert fresh["cached_files"] == 0 and not packs(tmp_path)
    cold = check(env, exp)
    assert cold["cached_files"] == 0 and len(packs(tmp_path)) == 1
    assert len(read_pack(packs(tmp_path)[0])) == 4
    warm = check(env, exp)
    assert warm["cached_files"] == 4
    assert same(fresh, cold) and same(cold, warm)
    # the findings are really there, not an empty answer that happens to match
    ids = {f["id"] for f in warm["findings"]}
    assert {"LB101", "LB103", "LB110"} <= ids, warm["findings"]
    assert any(f["suppressed"] for f in warm["findings"])
    assert warm["seeds"] and warm["seeds"][0]["file"] == "main.py"
    # text output too
    t1 = labbox("check", "--no-cache", exp, env=env)
    t2 = labbox("check", exp, env=env)
    assert t1.returncode == t2.returncode == 3 and t1.stdout == t2.stdout


def test_a_change_of_content_is_analysed_again(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    first = check(env, exp)
    assert not first["rejected"]
    (exp / "helper.py").write_text(HELPER + "import subprocess\n")
    second = check(env, exp)
    assert second["cached_files"] == 1  # main.py only
    assert [f["id"] for f in second["findings"] if f["file"] == "helper.py"] == ["LB102"]
    assert second["rejected"]
    # back to the old bytes: analysed again, and the answer is the first one
    (exp / "helper.py").write_text(HELPER)
    third = check(env, exp)
    assert third["cached_files"] == 1 and same(first, third)


def test_an_imported_module_that_goes_away_changes_the_importer(tmp_path):
    """main.py's bytes stay the same, but whether `helper` is one of the experiment's own
    modules is a fact about another file: the cached entry of main.py must not keep saying it
    is."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    assert not [f for f in check(env, exp)["findings"] if f["id"] == "LB201"]
    (exp / "helper.py").rename(exp / "helpers.py")
    doc = check(env, exp)
    lb201 = [f for f in doc["findings"] if f["id"] == "LB201"]
    assert [(f["file"], f["line"], f["name"]) for f in lb201] == [("main.py", 3, "helper")], doc
    assert same(doc, check(env, "--no-cache", exp))
    (exp / "helpers.py").rename(exp / "helper.py")
    assert not [f for f in check(env, exp)["findings"] if f["id"] == "LB201"]


def test_a_change_of_policy_or_flags_is_analysed_again(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "import shutil\nshutil.rmtree('build')\n",
                    files={"helper.py": HELPER})
    std = check(env, exp)
    assert check(env, exp)["cached_files"] == 2
    strict = check(env, "--policy", "strict", exp)
    assert strict["cached_files"] == 0
    assert same(strict, check(env, "--no-cache", "--policy", "strict", exp))
    assert strict["findings"] != std["findings"]
    allowed = check(env, "--allow-call", "shutil.rmtree", exp)
    assert allowed["cached_files"] == 0
    assert same(allowed, check(env, "--no-cache", "--allow-call", "shutil.rmtree", exp))
    # the experiment's own labbox.yaml is configuration as well
    (exp / "labbox.yaml").write_text("check:\n  deny:\n    modules: [random]\n")
    denied = check(env, exp)
    assert denied["cached_files"] == 0
    assert "LB120" in {f["id"] for f in denied["findings"]}


def test_damaged_entries_are_ignored_and_rewritten(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "eval('1')\n", files={
        "helper.py": HELPER, "a.py": "import os\nos.system('x')\n", "b.py": "X = 1\n"})
    ref = check(env, exp)
    [pack] = packs(tmp_path)
    es = read_pack(pack)
    assert len(es) == 4
    es[0] = es[0][:100]                                   # truncated
    flipped = bytearray(es[1])
    flipped[len(flipped) - 10] ^= 0x20                    # one flipped bit in the body
    es[1] = bytes(flipped)
    es[2] = bytes(len(es[2]))                             # zeroed
    write_pack(pack, es)
    doc = check(env, exp)
    assert doc["cached_files"] == 1 and same(ref, doc)
    # written again: all four answer now
    doc = check(env, exp)
    assert doc["cached_files"] == 4 and same(ref, doc)
    # an entry copied over another file's is not that file's
    es = read_pack(pack)
    es[3] = es[0]
    write_pack(pack, es)
    doc = check(env, exp)
    assert doc["cached_files"] == 3 and same(ref, doc)
    # a pack cut short: the entries before the cut still answer
    check(env, exp)
    data = pack.read_bytes()
    cut = (len(MAGIC) + table_len(pack)
           + sum(len(b"%d\n" % len(e)) + len(e) for e in read_pack(pack)[:2]) + 30)
    pack.write_bytes(data[:cut])
    doc = check(env, exp)
    assert doc["cached_files"] == 2 and same(ref, doc)
    assert check(env, exp)["cached_files"] == 4
    # not a pack at all
    pack.write_bytes(b"\x00garbage" * 100)
    doc = check(env, exp)
    assert doc["cached_files"] == 0 and same(ref, doc)
    assert check(env, exp)["cached_files"] == 4


def test_concurrent_checks_share_the_cache(tmp_path):
    env = cache_env(tmp_path)
    files = {f"m{i}.py": f"import os\nV{i} = {i}\nos.system('{i}')\n" for i in range(40)}
    exp = write_exp(tmp_path, MAIN, files=dict(files, **{"helper.py": HELPER}))
    ref = check(env, "--no-cache", exp)
    procs = [subprocess.Popen([LABBOX, "check", "--json", str(exp)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 3, err
        assert same(ref, json.loads(out))
    [pack] = packs(tmp_path)
    assert len(read_pack(pack)) == 42
    # no temporary file left behind by any of the writers
    assert not [p for p in entries_dir(tmp_path).iterdir() if p.name.startswith(".")]
    doc = check(env, exp)
    assert doc["cached_files"] == 42 and same(ref, doc)


def test_no_cache_reads_and_writes_nothing(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    check(env, exp)
    before = {p.name: p.read_bytes() for p in packs(tmp_path)}
    (exp / "helper.py").write_text(HELPER + "# changed\n")
    doc = check(env, "--no-cache", exp)
    assert doc["cached_files"] == 0
    assert {p.name: p.read_bytes() for p in packs(tmp_path)} == before
    assert "--no-cache" in labbox("check", "--help").stdout


def test_entries_are_private_and_others_are_not_believed(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    check(env, exp)
    d = entries_dir(tmp_path)
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    for p in packs(tmp_path):
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
        assert p.stat().st_uid == os.geteuid()
    assert check(env, exp)["cached_files"] == 2
    # a pack someone else could have written is not read (and is replaced by labbox's own)
    [victim] = packs(tmp_path)
    os.chmod(victim, 0o622)
    assert check(env, exp)["cached_files"] == 0
    assert stat.S_IMODE(packs(tmp_path)[0].stat().st_mode) == 0o600
    # a directory others may write to is not used at all
    os.chmod(d, 0o777)
    try:
        assert check(env, exp)["cached_files"] == 0
    finally:
        os.chmod(d, 0o700)
    assert check(env, exp)["cached_files"] == 2


def test_a_cache_inside_the_experiment_is_not_used(tmp_path):
    """The experiment's own files are the untrusted author's: a cache there could say its
    code is clean."""
    exp = write_exp(tmp_path, MAIN + "eval('1')\n", files={"helper.py": HELPER})
    env = user_dirs(exp / ".cache")
    for _ in range(2):
        doc = check(env, exp)
        assert doc["cached_files"] == 0 and doc["rejected"]
    assert not (exp / ".cache" / "labbox" / "check").exists()


def test_labbox_run_uses_the_cache(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER})
    first = run_exp(exp, tmp_path / "runs", env=env)
    assert first.rc == 0, first.why()
    assert first.result["check"]["cached_files"] == 0
    second = run_exp(exp, tmp_path / "runs", env=env)
    assert second.rc == 0, second.why()
    assert second.result["check"]["cached_files"] == 2
    assert second.result["findings"] == first.result["findings"]
    # a change is seen by the gate of the next run
    (exp / "helper.py").write_text(HELPER + "import subprocess\n")
    third = run_exp(exp, tmp_path / "runs", env=env)
    assert third.rc == 3, third.why()
    assert "LB102" in {f["id"] for f in third.result["findings"]}


def test_needs_come_back_from_the_cache(tmp_path):
    """What the code needs of the sandbox (a download, a GPU) is part of a file's answer: a
    warm check reports the same needs as the cold one, at the reader's own path."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, "import torch\nfrom transformers import AutoModel\n"
                    "m = AutoModel.from_pretrained('bert-base-uncased')\n"
                    "x = torch.zeros(1).to('cuda')\nprint('accuracy: 1')\n")
    cold = check(env, exp)
    warm = check(env, exp)
    assert cold["cached_files"] == 0 and warm["cached_files"] == 1
    kinds = sorted(n["kind"] for n in warm["needs"])
    assert kinds == ["gpu", "network"], warm["needs"]
    assert warm["needs"] == cold["needs"]
    assert all(n["evidence"]["file"] == "main.py" for n in warm["needs"])


STDLIB_MAIN = """\
import pydoc
print("TIME_ESTIMATE: 1")
pydoc.pipepager("text", "less")
print("accuracy: 0.5")
"""


def summaries(tmp_path):
    d = tmp_path / "xdg" / "labbox" / "stdlib"
    return sorted(d.iterdir()) if d.is_dir() else []


def reseal(path, body):
    """A summary file with records body and a header that names them (docs/check.md)."""
    import hashlib
    head = path.read_bytes().split(b"\n", 1)[0].split(b"\t")
    assert head[0] == b"labbox.stdlib/7" and len(head) == 3
    path.write_bytes(b"%s\t%s\t%s\n" % (head[0], head[1], hashlib.sha256(body).hexdigest().encode())
                     + body)


def pipepager(doc):
    return [f for f in doc["findings"] if "pydoc.pipepager" in f["message"]]


def test_a_changed_library_summary_is_a_change(tmp_path):
    """The standard library's summary is part of every entry's key by its own digest, not only
    by which interpreter it is of: a summary built again differently (another labbox, or by
    hand) under the same interpreter and library directory answers nothing from the cache."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, STDLIB_MAIN)
    first = check(env, exp)
    assert pipepager(first), first["findings"]
    assert check(env, exp)["cached_files"] == 1
    [s] = summaries(tmp_path)
    body = s.read_bytes().split(b"\n", 1)[1]
    lines = [ln for ln in body.split(b"\n") if not ln.startswith(b"N pydoc.pipepager ")]
    reseal(s, b"\n".join(lines))
    second = check(env, exp)
    assert second["cached_files"] == 0
    assert not pipepager(second), second["findings"]
    # and back: the first summary's entries answer again only once it is that summary again
    reseal(s, body)
    third = check(env, exp)
    assert pipepager(third) and same(first, third)


def test_a_damaged_library_summary_is_built_again(tmp_path):
    """A summary whose records no longer match its header (damaged after it was written) is
    not believed when a file has to be analysed: it is built again from the library, and
    what that check found is not kept under the old summary's identity."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, STDLIB_MAIN)
    first = check(env, exp)
    [s] = summaries(tmp_path)
    good = s.read_bytes()
    head, body = good.split(b"\n", 1)
    s.write_bytes(head + b"\n" + body.replace(b"N pydoc.pipepager ", b"N pydoc.pipepagex "))
    # nothing to analyse: the header alone is read, and the entries it names still stand
    assert check(env, exp)["cached_files"] == 1
    (exp / "main.py").write_text(STDLIB_MAIN + "# changed\n")
    second = check(env, exp)
    assert second["cached_files"] == 0 and pipepager(second), second["findings"]
    assert s.read_bytes() == good  # built again and kept
    third = check(env, exp)
    assert third["cached_files"] == 0 and same(second, third)  # the pack was not kept
    assert check(env, exp)["cached_files"] == 1
    assert pipepager(first)


def test_a_summary_that_is_not_one_is_built_again(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, STDLIB_MAIN)
    first = check(env, exp)
    [s] = summaries(tmp_path)
    good = s.read_bytes()
    for bad in (b"", b"labbox.stdlib/5\t554\n", good.split(b"\n", 1)[0], b"labbox.stdlib/2\t554\n"
                + good.split(b"\n", 1)[1], good[:40] + b"X" + good[41:]):
        s.write_bytes(bad)
        doc = check(env, exp)
        assert same(doc, first) and doc["cached_files"] in (0, 1), bad[:80]
        assert pipepager(doc)
        assert s.read_bytes() == good
