"""A warm `labbox check` whose every file is trusted by its metadata prints the answer it
printed before (docs/check.md, "The whole answer kept"), byte for byte what the check prints
without that answer (from the entries alone) and, but for the cache's own counts, what it
prints without any cache. Every change a user can make (an edit with the mtime put back, a
file added, removed or renamed, another policy, another labbox.yaml, other arguments, another
working directory, a damaged answer) gives the answer of a check without the cache."""
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
ANSWER_MAGIC = b"labbox.check-answer/2\n"


def cache_env(tmp_path):
    return user_dirs(tmp_path / "xdg")


def answers_dir(tmp_path):
    return tmp_path / "xdg" / "labbox" / "check" / "answers"


def answer_files(tmp_path):
    d = answers_dir(tmp_path)
    return sorted(p for p in d.iterdir() if not p.name.startswith(".")) if d.is_dir() else []


def run(env, *args, cwd=None):
    p = labbox("check", *map(str, args), env=env, cwd=cwd)
    assert p.returncode in (0, 3), p.stderr
    return p


def out(p):
    return (p.returncode, p.stdout, p.stderr)


def without_counts(p):
    doc = json.loads(p.stdout)
    doc.pop("cached_files")
    doc.pop("unread_files")
    return (p.returncode, doc, p.stderr)


def settle(env, *args, cwd=None):
    """Checks until the files are trusted, and once more so that the answer is kept."""
    time.sleep(SETTLE)
    run(env, *args, cwd=cwd)
    time.sleep(SETTLE)
    return run(env, *args, cwd=cwd)


def test_the_kept_answer_is_the_answer_over_a_corpus(tmp_path):
    """The check's own corpus: the kept answer, the entries' answer and the uncached one."""
    env = cache_env(tmp_path)
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "tests" / "check", tree / "check")
    (tree / "main.py").write_text("print(1)\n")  # a directory run would start
    assert sum(1 for _ in tree.rglob("*.py")) > 100
    for fmt in (["--json"], []):
        args = [*fmt, "--policy", "permissive", tree]
        shutil.rmtree(answers_dir(tmp_path), ignore_errors=True)
        ref = labbox("check", "--no-cache", *args, env=env)
        run(env, *args)
        first_warm = settle(env, *args)  # answered by the entries, the answer kept
        assert len(answer_files(tmp_path)) == 1
        hit = run(env, *args)
        assert out(hit) == out(first_warm)
        # only the entries: the answers taken away
        shutil.rmtree(answers_dir(tmp_path))
        entries = run(env, *args)
        assert out(entries) == out(hit)
        if fmt:
            doc = json.loads(hit.stdout)
            assert doc["cached_files"] == doc["unread_files"] == doc["files"]
            assert without_counts(hit) == without_counts(ref)
        else:
            assert out(hit) == out(ref)
        assert len(hit.stdout) > 10000


_M = (1 << 64) - 1
_K1, _K2, _K3 = 0xc2b2ae3d27d4eb4f, 0x9e3779b185ebca87, 0x165667b19e3779f9


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M


def checksum(data):
    """labbox's checksum of its own files (src/util/checksum.c), in hex: four 64-bit lanes
    over 32-byte steps, the zero-padded tail, then each lane mixed with the length and the
    others. Written out here so the test reseals a file as labbox would."""
    v = [(_K1 + _K2) & _M, _K2, 0, (-_K1) & _M]
    full = len(data) // 32 * 32
    tail = data[full:] + bytes(32 - (len(data) - full))
    for block in [data[o:o + 32] for o in range(0, full, 32)] + [tail]:
        for i in range(4):
            w = int.from_bytes(block[8 * i:8 * i + 8], "little")
            v[i] = (_rotl((v[i] + w * _K2) & _M, 31) * _K1) & _M
    mix = v[0] ^ _rotl(v[1], 7) ^ _rotl(v[2], 12) ^ _rotl(v[3], 18)
    out = b""
    for i in range(4):
        h = v[i] ^ ((len(data) * _K3) & _M) ^ _rotl(mix, 8 * i + 1) ^ i
        h ^= h >> 33
        h = (h * _K2) & _M
        h ^= h >> 29
        h = (h * _K3) & _M
        h ^= h >> 32
        out += h.to_bytes(8, "little")
    return out.hex()


def reseal(path, stdout):
    """The answer file with its stdout replaced and its checksum made right again."""
    data = path.read_bytes()
    assert data.startswith(ANSWER_MAGIC)
    body = data[len(ANSWER_MAGIC) + 65:]
    digest, rc, rest = body.split(b"\n", 2)
    n, rest = rest.split(b"\n", 1)
    err = rest[int(n):]
    new = digest + b"\n" + rc + b"\n" + b"%d\n" % len(stdout) + stdout + err
    path.write_bytes(ANSWER_MAGIC + checksum(new).encode() + b"\n" + new)


def test_the_answer_file_is_what_is_printed_and_a_damaged_one_is_not(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "os.system('ls')\n", files={"helper.py": HELPER})
    ref = run(env, "--no-cache", exp)
    warm = settle(env, exp)
    assert out(warm) == out(ref) and warm.returncode == 3
    [f] = answer_files(tmp_path)
    assert f.stat().st_mode & 0o077 == 0 and f.stat().st_uid == os.geteuid()
    # a well-formed answer is printed as it is (which shows that a hit decodes nothing)...
    reseal(f, b"kept answer\n")
    assert run(env, exp).stdout == "kept answer\n"
    # ...and a damaged one is not believed: checked again, and kept anew
    data = f.read_bytes()
    f.write_bytes(data.replace(b"kept answer", b"kept answeR"))
    assert out(run(env, exp)) == out(ref)
    assert out(run(env, exp)) == out(ref)
    f.write_bytes(b"")
    assert out(run(env, exp)) == out(ref)
    # another user's (here: one others may write) is not read
    reseal(f, b"planted\n")
    f.chmod(0o666)
    assert out(run(env, exp)) == out(ref)


def test_changed_files_give_the_uncached_answer(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": "import os\nos.getcwd('x')\n" + HELPER})
    settle(env, "--json", exp)
    assert len(answer_files(tmp_path)) == 1

    def same():
        warm = run(env, "--json", exp)
        assert without_counts(warm) == without_counts(run(env, "--no-cache", "--json", exp))
        return json.loads(warm.stdout)

    # an edit of the same size, the mtime put back (the ctime changes)
    st = (exp / "helper.py").stat()
    text = (exp / "helper.py").read_text()
    (exp / "helper.py").write_text(text.replace("os.getcwd", "os.system"))
    os.utime(exp / "helper.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (exp / "helper.py").stat().st_size == st.st_size
    assert [f["id"] for f in same()["findings"] if f["file"] == "helper.py"] == ["LB101"]
    # a file added
    (exp / "extra.py").write_text("eval('1')\n")
    assert "extra.py" in {f["file"] for f in same()["findings"]}
    settle(env, "--json", exp)
    # renamed
    os.rename(exp / "extra.py", exp / "other.py")
    assert "other.py" in {f["file"] for f in same()["findings"]}
    settle(env, "--json", exp)
    # removed: main.py's import of helper is no longer one of the experiment's own
    (exp / "helper.py").unlink()
    doc = same()
    assert [f["name"] for f in doc["findings"] if f["id"] == "LB201"] == ["helper"]
    assert doc["files"] == 2


def test_configuration_and_context_give_their_own_answer(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "import shutil\nshutil.rmtree('x')\n",
                    files={"helper.py": HELPER})
    settle(env, exp)

    def same(*args, cwd=None):
        warm = run(env, *args, cwd=cwd)
        ref = labbox("check", "--no-cache", *map(str, args), env=env, cwd=cwd)
        if "--json" in args:
            assert without_counts(warm) == without_counts(ref)
        else:
            assert out(warm) == out(ref)
        return warm

    # another policy: LB108 is an error under strict
    assert same("--policy", "strict", exp).returncode == 3
    assert same(exp).returncode == 0
    # labbox.yaml: what its keys hold, and the plan, which they do not
    (exp / "labbox.yaml").write_text("check:\n  deny:\n    calls: [shutil.rmtree]\n")
    assert "LB120" in same(exp).stdout
    settle(env, exp)
    (exp / "labbox.yaml").write_text("budget: 60\nplan: {conditions: 40, seeds: 30, "
                                     "iterations: 9000}\n")
    assert "LB50" in same(exp).stdout
    settle(env, exp)
    (exp / "labbox.yaml").write_text("budget: 60\nplan: {conditions: 1, seeds: 1, "
                                     "iterations: 10}\n")
    assert "LB50" not in same(exp).stdout
    # the same relative path from another directory names other files
    other = write_exp(tmp_path, "eval('1')\n", name="exp2")
    settle(env, "main.py", cwd=exp)
    assert "LB103" in same("main.py", cwd=other).stdout
    assert "LB103" not in same("main.py", cwd=exp).stdout
    # text and JSON are kept apart
    settle(env, "--json", exp)
    json.loads(same("--json", exp).stdout)
    assert not same(exp).stdout.startswith("{")


def test_a_changed_pack_is_not_answered_for(tmp_path):
    """The kept answer stands for the pack it was made from: the pack damaged (or replaced)
    afterwards, the check answers as that pack now does."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN + "eval('1')\n", files={"helper.py": HELPER})
    ref = run(env, "--no-cache", "--json", exp)
    warm = settle(env, "--json", exp)
    assert json.loads(warm.stdout)["unread_files"] == 2
    assert len(answer_files(tmp_path)) == 1
    d = tmp_path / "xdg" / "labbox" / "check"
    [pack] = [p for p in d.iterdir() if p.is_file() and not p.name.startswith(".")]
    pack.write_bytes(b"\x00garbage" * 100)
    doc = json.loads(run(env, "--json", exp).stdout)
    assert doc["cached_files"] == 0  # analysed again: the kept answer said 2
    assert without_counts(run(env, "--json", exp)) == without_counts(ref)


def test_changed_directories_give_the_uncached_answer(tmp_path):
    """A warm check finds the files from the walk's kept listing when every directory's
    metadata is as it was (docs/check.md, "The whole answer kept"): a file added deep down
    (its directory's mtime put back), a directory that becomes or stops being a virtual
    environment, one renamed or replaced by a link, and a damaged listing each give the
    answer of a check without the cache."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, MAIN, files={"helper.py": HELPER,
                                           "pkg/__init__.py": "",
                                           "pkg/sub/deep.py": "eval('1')\n"})
    walks = tmp_path / "xdg" / "labbox" / "check" / "walks"

    def same():
        warm = run(env, "--json", exp)
        assert without_counts(warm) == without_counts(run(env, "--no-cache", "--json", exp))
        return {f["file"] for f in json.loads(warm.stdout)["findings"]}

    assert "pkg/sub/deep.py" in {f["file"] for f in json.loads(
        settle(env, "--json", exp).stdout)["findings"]}
    assert len([p for p in walks.iterdir() if not p.name.startswith(".")]) == 1
    assert "pkg/sub/deep.py" in same()
    # a file added deep down, its directory's mtime put back (its ctime changes)
    sub = exp / "pkg" / "sub"
    st = sub.stat()
    (sub / "new.py").write_text("exec('1')\n")
    os.utime(sub, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "pkg/sub/new.py" in same()
    settle(env, "--json", exp)
    # the directory becomes a virtual environment's, then stops being one
    (sub / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert not any(f.startswith("pkg/sub/") for f in same())
    settle(env, "--json", exp)
    (sub / "pyvenv.cfg").unlink()
    assert "pkg/sub/new.py" in same()
    settle(env, "--json", exp)
    # renamed
    os.rename(sub, exp / "pkg" / "other")
    assert "pkg/other/deep.py" in same()
    settle(env, "--json", exp)
    # replaced by a link: links are not followed
    os.rename(exp / "pkg", tmp_path / "pkg_real")
    os.symlink(tmp_path / "pkg_real", exp / "pkg")
    assert not any(f.startswith("pkg/") for f in same())
    settle(env, "--json", exp)
    # a damaged listing is walked again
    [listing] = [p for p in walks.iterdir() if not p.name.startswith(".")]
    listing.write_bytes(listing.read_bytes()[:-3] + b"xy\n")
    os.unlink(exp / "pkg")
    os.rename(tmp_path / "pkg_real", exp / "pkg")
    assert "pkg/other/deep.py" in same()
