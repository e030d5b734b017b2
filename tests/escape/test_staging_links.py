"""Code reached through a symbolic link out of the experiment is read by the check and hashed
in the manifest like the experiment's own: a pipeline that writes `lib -> ../shared` beside
its experiment cannot run code the gate never saw. Links to data stay links. As root and
(run-as-user) as an ordinary user."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from escape_lib import IS_ROOT, LABBOX, PYTHON, CALL_TIMEOUT, token

HOSTILE = "import os\nos.system('touch /proc/self/cwd/../pwned')\n"


def labbox_run(exp, runs):
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir", str(runs),
                        str(exp)], capture_output=True, text=True, timeout=CALL_TIMEOUT)
    return p, json.loads(p.stdout)


def test_a_package_linked_from_outside_is_checked(tmp_path):
    shared = tmp_path / "shared" / "helpers"
    (shared / "deep").mkdir(parents=True)
    (shared / "__init__.py").write_text("")
    (shared / "deep" / "__init__.py").write_text(HOSTILE)
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("import helpers.deep\nprint('accuracy: 1')\n")
    os.symlink("../shared/helpers", exp / "helpers")
    p, doc = labbox_run(exp, tmp_path / "runs")
    assert p.returncode == 3 and doc["status"] == "rejected", (doc["status"], p.stderr[-800:])
    staged = Path(doc["run_dir"]) / "exp" / "helpers"
    assert staged.is_dir() and not staged.is_symlink()
    assert (staged / "deep" / "__init__.py").read_text() == HOSTILE
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert "helpers/deep/__init__.py" in json.dumps(man), "the linked code is not hashed"


def test_a_directory_of_data_linked_from_outside_stays_a_link(tmp_path):
    data = tmp_path / "datasets" / "toy"
    data.mkdir(parents=True)
    (data / "x.csv").write_text("1,2\n3,4\n")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    os.symlink(str(data), exp / "data")
    p, doc = labbox_run(exp, tmp_path / "runs")
    assert p.returncode == 0, (doc["status"], p.stderr[-800:])
    staged = Path(doc["run_dir"]) / "exp" / "data"
    assert staged.is_symlink() and os.readlink(staged) == str(data)


def _run_dir_text(doc):
    """Everything the run directory holds, as one text (the staged exp/ included)."""
    blobs = []
    for dirpath, _, names in os.walk(doc["run_dir"]):
        for n in names:
            p = os.path.join(dirpath, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    blobs.append(f.read().decode("latin-1"))
    return "\n".join(blobs)


@pytest.mark.parametrize("how", ["file", "directory"])
def test_linked_code_is_copied_only_where_anyone_could_read_it(tmp_path, how):
    """labbox stages with its own privileges (root's, or those of the user whose home the
    sandbox hides): a link named like code (helper.py -> a closed file) or a linked
    directory that holds a .py (lib -> /etc, lib -> ~) was copied by content, so the
    experiment read what it may not (/etc/shadow, as uid 65534; ~/.ssh, which the sandbox
    hides). Such content is refused, and the run does not start."""
    secret = token()
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "__init__.py").write_text("")
    (vault / "key.py").write_text(f"KEY = {secret!r}\n")
    (vault / "key.py").chmod(0o600)
    vault.chmod(0o700)
    exp = tmp_path / "exp"
    exp.mkdir()
    if how == "file":
        os.symlink("../vault/key.py", exp / "helper.py")
        read = "helper.py"
    else:
        os.symlink("../vault", exp / "lib")
        read = "lib/key.py"
    (exp / "main.py").write_text(f"print(open({read!r}).read())\nprint('accuracy: 1')\n")
    p, doc = labbox_run(exp, tmp_path / "runs")
    assert secret not in p.stdout + p.stderr, "the experiment printed the linked secret"
    assert secret not in _run_dir_text(doc), "the secret was staged into the run directory"
    assert p.returncode == 125 and doc["status"] == "infra_error", (doc["status"], p.stderr[-800:])
    assert "not every user may read it" in doc["infra_error"]["message"], doc["infra_error"]


SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
while True:
    libc.syscall(316, -100, a, -100, b, 2)   # renameat2(AT_FDCWD, a, AT_FDCWD, b, EXCHANGE)
"""


@pytest.mark.skipif(not IS_ROOT, reason="a file only labbox may read needs labbox as root")
@pytest.mark.parametrize("how", ["file", "directory"])
def test_linked_code_swapped_while_staged_is_never_the_closed_one(tmp_path, how):
    """Staging judged a link's target by one resolution and copied it through another: a
    link swapped in between (another user's loop, or a sandbox with the directory on a rw
    volume) between a public decoy and a closed file had the closed file copied into the
    sandbox. The object judged is the object copied, whatever the link says meanwhile."""
    secret = token()
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "key.pyc").write_text(f"{secret}\n")
    # a closed file; in a directory, one the closed directory alone keeps from others
    (vault / "key.pyc").chmod(0o600 if how == "file" else 0o644)
    vault.chmod(0o700)
    decoy = tmp_path / "pub"
    for _ in range(100):  # a deep decoy widens the window between judging and copying
        decoy = decoy / "d"
    decoy.mkdir(parents=True)
    (decoy / "key.pyc").write_text("X = 1\n")
    (decoy / "lib").mkdir()
    (decoy / "lib" / "key.pyc").write_text("X = 1\n")
    for d in [tmp_path, *decoy.relative_to(tmp_path).parents, decoy.relative_to(tmp_path)]:
        (tmp_path / d).chmod(0o755)
    exp = tmp_path / "exp"
    exp.mkdir()
    if how == "file":
        # the link itself is swapped for one to the closed file
        read = "helper.pyc"
        os.symlink(decoy / "key.pyc", exp / read)
        os.symlink(vault / "key.pyc", tmp_path / "alt")
        swapped = (exp / read, tmp_path / "alt")
    else:
        # a directory on the path the link names is swapped for a link to the closed one
        read = "lib/key.pyc"
        os.symlink(decoy / "lib", exp / "lib")
        os.symlink(vault, decoy / "alt")
        swapped = (decoy / "lib", decoy / "alt")
    (exp / "main.py").write_text(f"print(repr(open({read!r}).read()))\nprint('accuracy: 1')\n")
    swap = subprocess.Popen([PYTHON, "-c", SWAPPER, *map(str, swapped)])
    try:
        for i in range(60):
            runs = tmp_path / f"runs{i}"
            p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir",
                                str(runs), str(exp)], capture_output=True, text=True,
                               timeout=CALL_TIMEOUT)
            assert secret not in p.stdout + p.stderr, f"attempt {i}: the sandbox read the secret"
            assert secret not in _run_dir_text({"run_dir": str(next(runs.iterdir()))}), \
                f"attempt {i}: the closed file was staged"
    finally:
        swap.kill()
        swap.wait()
