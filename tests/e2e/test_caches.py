"""What labbox keeps between runs so that running unchanged code again is cheap: the interpreter
probe, pip freeze and compile() verdicts, in the user's cache directory. Each test gives labbox
a private XDG_CACHE_HOME and checks, from the outside, what was reused and that a change is
never answered from the cache."""
import json
import os
import stat
import subprocess

import pytest

from conftest import PYTHON, labbox, run_exp, write_exp, user_dirs

OK = 'print("accuracy: 0.5")\n'


def cache_env(tmp_path):
    return user_dirs(tmp_path / "xdg")


def check_json(env, *args):
    p = labbox("check", "--json", "--python", PYTHON, *map(str, args), env=env)
    assert p.returncode in (0, 3), p.stderr
    return json.loads(p.stdout)


def test_run_again_reuses_probe_freeze_and_compile(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, OK, files={"util.py": "X = 1\n"})
    first = run_exp(exp, tmp_path / "runs", env=env)
    assert first.rc == 0, first.why()
    man = first.file_json("manifest.json")
    assert man["interpreter"]["from_cache"] is False
    assert man["packages_from_cache"] is False
    assert first.result["check"]["syntax_cached_files"] == 0

    second = run_exp(exp, tmp_path / "runs", env=env)
    assert second.rc == 0, second.why()
    man2 = second.file_json("manifest.json")
    assert man2["interpreter"]["from_cache"] is True
    assert man2["packages_from_cache"] is True
    assert second.result["check"]["syntax_cached_files"] == 2
    # The same facts either way.
    for k in ("path", "version", "implementation", "prefix", "base_prefix"):
        assert man2["interpreter"][k] == man["interpreter"][k]
    assert second.result["check"]["syntax_by"] == first.result["check"]["syntax_by"]
    assert (second.run_dir / "environment.txt").read_text() == \
        (first.run_dir / "environment.txt").read_text()


def test_compile_verdicts_follow_the_bytes(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, OK, files={"a.py": "A = 1\n", "b.py": "B = 2\n"})
    assert check_json(env, exp)["syntax_cached_files"] == 0
    assert check_json(env, exp)["syntax_cached_files"] == 3

    # One file changed: only that one is compiled again.
    (exp / "a.py").write_text("A = 10\n")
    assert check_json(env, exp)["syntax_cached_files"] == 2

    # A syntax error is never kept: it is found again, with its line, every time.
    (exp / "b.py").write_text("def f(:\n    pass\n")
    for _ in range(2):
        doc = check_json(env, exp)
        assert doc["syntax_cached_files"] == 2
        errs = [f for f in doc["findings"] if f["id"] == "LB001"]
        assert errs and errs[0]["file"].endswith("b.py") and errs[0]["line"] == 1, doc

    # Code valid for one Python is not assumed valid for another interpreter.
    other = tmp_path / "bin" / "python3"
    other.parent.mkdir()
    # labbox binds the interpreter's directory (tmp_path) for the sandbox's user (nobody, when
    # root runs the tests): pytest made it 0700.
    os.chmod(tmp_path, 0o755)
    os.symlink(os.path.realpath(PYTHON), other)
    (exp / "b.py").write_text("B = 3\n")
    p = labbox("check", "--json", "--python", other, exp, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["syntax_cached_files"] == 0


def test_cache_others_can_write_is_not_used(tmp_path):
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, OK)
    check_json(env, exp)
    compile_dir = tmp_path / "xdg" / "labbox" / "compile"
    assert compile_dir.is_dir() and stat.S_IMODE(compile_dir.stat().st_mode) == 0o700
    assert check_json(env, exp)["syntax_cached_files"] == 1
    # A verdict directory anyone could write to could pass code that does not compile.
    os.chmod(compile_dir, 0o777)
    try:
        assert check_json(env, exp)["syntax_cached_files"] == 0
    finally:
        os.chmod(compile_dir, 0o700)


def test_probe_cache_follows_the_interpreter(tmp_path):
    """A venv's pyvenv.cfg decides sys.prefix: editing it is a new interpreter."""
    env = cache_env(tmp_path)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    real = os.path.realpath(PYTHON)
    os.symlink(real, venv / "bin" / "python")
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(f"home = {os.path.dirname(real)}\ninclude-system-site-packages = true\n")
    exp = write_exp(tmp_path, OK)
    py = str(venv / "bin" / "python")

    def run():
        r = run_exp(exp, tmp_path / "runs", env=env, python=py)
        assert r.rc == 0, r.why()
        return r.file_json("manifest.json")["interpreter"]

    first = run()
    assert first["from_cache"] is False and first["prefix"] == str(venv)
    assert run()["from_cache"] is True
    cfg.write_text(cfg.read_text() + "# edited\n")
    third = run()
    assert third["from_cache"] is False and third["prefix"] == str(venv)


def test_no_cache_directory_still_runs(tmp_path):
    """Without HOME or XDG_CACHE_HOME there is nowhere to keep anything: every run asks."""
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")}
    exp = write_exp(tmp_path, OK)
    for _ in range(2):
        r = run_exp(exp, tmp_path / "runs", env=env)
        assert r.rc == 0, r.why()
        assert r.file_json("manifest.json")["interpreter"]["from_cache"] is False
        assert r.result["check"]["syntax_cached_files"] == 0


def test_a_run_of_unchanged_code_leaves_the_check_cache_as_it_was(tmp_path):
    """A run checks a staged copy (new inodes each time): its check finds the entries by
    content and, when none changed, writes nothing into the user's cache."""
    env = cache_env(tmp_path)
    exp = write_exp(tmp_path, OK, files={"util.py": "X = 1\n"})
    first = run_exp(exp, tmp_path / "runs", env=env)
    assert first.rc == 0, first.why()
    check_dir = tmp_path / "xdg" / "labbox" / "check"

    def listing():
        return {e.name: (e.stat().st_ino, e.stat().st_mtime_ns, e.stat().st_size)
                for e in os.scandir(check_dir)}

    before = listing()
    assert before
    second = run_exp(exp, tmp_path / "runs", env=env)
    assert second.rc == 0, second.why()
    assert second.result["check"]["cached_files"] == 2
    assert listing() == before
    # A change is checked again, and only then is the cache written.
    (exp / "util.py").write_text("import os\nos.system('true')\n")
    third = run_exp(exp, tmp_path / "runs", env=env)
    assert third.result["check"]["cached_files"] == 1
    assert listing() != before
    assert any("os.system" in json.dumps(f) for f in third.result["findings"])


PYENV = "/root/.pyenv"


def pyenv_versions():
    """Installed pyenv versions labbox runs (3.8 on), or none where pyenv is absent or, for
    the ordinary user, unreadable."""
    root = PYENV + "/versions"
    if not os.access(root, os.R_OK | os.X_OK):
        return []
    out = []
    for v in sorted(os.listdir(root), key=lambda v: [int(x) if x.isdigit() else 0 for x in v.split(".")]):
        parts = v.split(".")
        if len(parts) == 3 and parts[0] == "3" and parts[1].isdigit() and int(parts[1]) >= 8 \
                and os.access(f"{root}/{v}/bin/python3", os.X_OK):
            out.append(v)
    return out


def test_a_pyenv_shim_is_asked_again_only_when_its_choice_can_change(tmp_path):
    """A pyenv shim runs all of pyenv (hundreds of processes) to choose an interpreter. labbox
    keeps the answer while everything pyenv chooses by stays the same, and asks again when
    the project's .python-version, PYENV_VERSION or the working directory changes: the run
    always uses the interpreter the shim would start."""
    shim = PYENV + "/shims/python3"
    versions = pyenv_versions()
    if not os.access(shim, os.X_OK) or len(versions) < 2:
        pytest.skip("pyenv with two versions is not installed here, or not for this user")
    a, b = versions[0], versions[-1]
    env = {k: v for k, v in cache_env(tmp_path).items() if k not in ("PYENV_VERSION", "PYENV_DIR")}
    proj = tmp_path / "proj"
    exp = write_exp(proj, 'import sys\nprint("minor: %d" % sys.version_info[1])\n')
    (proj / ".python-version").write_text(a + "\n")

    def run(cwd=proj, **extra):
        r = run_exp(exp, tmp_path / "runs", env=dict(env, **extra), cwd=cwd, python=shim)
        assert r.rc == 0, r.why()
        interp = r.file_json("manifest.json")["interpreter"]
        assert r.result["metrics"]["values"]["minor"] == int(interp["version"].split(".")[1])
        return interp["version"], interp["from_cache"]

    assert run() == (a, False)
    assert run() == (a, True)
    # The project's pin edited: the shim's choice is new, and is asked.
    (proj / ".python-version").write_text(b + "\n")
    assert run()[0] == b
    assert run() == (b, True)
    # A directory below the project finds the project's pin; another one without a pin has
    # the global version, whatever the project's answer was.
    sub = proj / "sub"
    sub.mkdir()
    assert run(cwd=sub)[0] == b
    other = tmp_path / "elsewhere"
    other.mkdir()
    want = subprocess.run([shim, "-c", "import platform; print(platform.python_version())"],
                          cwd=other, env=env, capture_output=True, text=True, check=True)
    assert run(cwd=other)[0] == want.stdout.strip()
    # Each directory keeps its own answer.
    assert run() == (b, True)
    # `pyenv shell` (PYENV_VERSION) wins over the file.
    assert run(PYENV_VERSION=a)[0] == a
