"""Code reached through a symbolic link out of the experiment is read by the check and hashed
in the manifest like the experiment's own: a pipeline that writes `lib -> ../shared` beside
its experiment cannot run code the gate never saw. Links to data stay links. As root and
(run-as-user) as an ordinary user."""
import json
import os
import subprocess
from pathlib import Path

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT

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
