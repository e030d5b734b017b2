"""Python environments: discovery (venvs, a conda-style envs/ tree, environments.txt), import
checks in the sandbox with their cache, and `run --env auto|NAME|PATH` choosing or refusing.

Every environment here is a real venv made by /usr/bin/python3 -m venv; one made with
--system-site-packages sees Debian's numpy. A package only one environment has is a real
package directory in that environment's site-packages."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import PYTHON, labbox, unique, write_exp

pytestmark = pytest.mark.skipif(subprocess.run([PYTHON, "-c", "import venv, numpy"]).returncode != 0,
                                reason="needs python3-venv and python3-numpy (scripts/deps)")

SYS_VERSION = subprocess.run([PYTHON, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()


def make_venv(path: Path, system_site=False):
    cmd = [PYTHON, "-m", "venv", "--without-pip", str(path)]
    if system_site:
        cmd.insert(4, "--system-site-packages")
    subprocess.run(cmd, check=True)
    return path


def site_packages(venv: Path) -> Path:
    (sp,) = (venv / "lib").glob("python3*/site-packages")
    return sp


def install_package(venv: Path, name: str):
    pkg = site_packages(venv) / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 42\n")


@pytest.fixture
def world(tmp_path, request):
    """A home with a conda-style install (envs/alpha without numpy, envs/beta with numpy and a
    package of its own), an environment elsewhere listed in environments.txt, and an
    environment for labbox that sees only these (and /usr/bin/python3)."""
    if shutil.which("conda", path="/usr/bin:/bin") or shutil.which("mamba", path="/usr/bin:/bin"):
        pytest.skip("a real conda answers instead of the envs/ tree")
    # Not under /tmp: the sandbox hides the home, and /tmp is its own there.
    home = Path(tempfile.mkdtemp(prefix="lbx-env-home-", dir="/var/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(home, ignore_errors=True))
    envs = home / "miniconda3" / "envs"
    envs.mkdir(parents=True)
    alpha = make_venv(envs / "alpha")
    beta = make_venv(envs / "beta", system_site=True)
    marker = "lbmark_" + unique("m").split("-")[1]
    install_package(beta, marker)
    gamma = make_venv(tmp_path / "elsewhere" / "gamma")
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(f"{gamma}\n")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "XDG_STATE_HOME": str(tmp_path / "state"),
           "LANG": "C.UTF-8"}
    return {"home": home, "alpha": alpha, "beta": beta, "gamma": gamma, "marker": marker,
            "env": env, "tmp": tmp_path}


def probe(world, *args):
    p = labbox("probe", "--json", *args, env=world["env"])
    assert p.returncode in (0, 125), p.stderr
    return {e["name"]: e for e in json.loads(p.stdout)["environments"]}


def test_discovery_lists_conda_envs_and_environments_txt(world):
    # A pyenv root of the test's own (pyenv itself is not needed: its versions are directories).
    make_venv(world["tmp"] / "pyenv" / "versions" / "3.99-test")
    world["env"]["PYENV_ROOT"] = str(world["tmp"] / "pyenv")
    envs = probe(world)
    assert envs["3.99-test"]["kind"] == "pyenv" and envs["3.99-test"]["found_by"] == "pyenv"
    assert envs["3.99-test"]["version"] == SYS_VERSION
    for name in ("alpha", "beta", "gamma"):
        e = envs[name]
        assert e["kind"] == "conda" and e["usable"], e
        assert e["version"] == SYS_VERSION
        assert e["path"] == str(world[name])
    assert envs["gamma"]["found_by"] == "environments.txt"
    assert envs["alpha"]["found_by"] == "conda install"
    system = [e for e in envs.values() if e["python"] == "/usr/bin/python3"]
    assert system and system[0]["version"] == SYS_VERSION


def test_imports_are_checked_per_environment_and_cached(world):
    m = world["marker"]
    envs = probe(world, "--imports", f"numpy,{m}")
    assert envs["alpha"]["imports"] == {"numpy": False, m: False}
    assert "No module named 'numpy'" in envs["alpha"]["import_errors"]["numpy"]
    assert envs["beta"]["imports"] == {"numpy": True, m: True}
    assert envs["gamma"]["imports"] == {"numpy": False, m: False}
    again = probe(world, "--imports", f"numpy,{m}")
    assert again["alpha"]["imports_cached"] and again["beta"]["imports_cached"]
    assert again["alpha"]["imports"] == envs["alpha"]["imports"]
    # Installing into alpha changes its site-packages: its answers are asked again.
    install_package(world["alpha"], m)
    after = probe(world, "--imports", f"numpy,{m}")
    assert not after["alpha"]["imports_cached"]
    assert after["alpha"]["imports"] == {"numpy": False, m: True}
    assert after["beta"]["imports_cached"]


def test_imports_table_and_bad_names(world):
    p = labbox("probe", "--imports", f"numpy,{world['marker']}", env=world["env"])
    line = next(l for l in p.stdout.splitlines() if l.split()[:1] == ["beta"])
    assert line.split()[1:5] == ["conda", SYS_VERSION, "yes", "yes"], p.stdout
    bad = labbox("probe", "--json", "--imports", "numpy,os;rm", env=world["env"])
    assert bad.returncode == 2
    assert "'os;rm' is not a module name" in json.loads(bad.stdout)["error"]["message"]


def run_env(world, expdir, *opts):
    runs = world["tmp"] / "runs"
    p = labbox("run", "--json", "--runs-dir", runs, *opts, expdir, env=world["env"])
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


MAIN = """
import sys
import numpy
import {marker}
import helper
print("prefix:", sys.prefix)
print("accuracy: 0.5")
"""


def test_auto_picks_the_first_environment_that_imports_everything(world):
    exp = write_exp(world["tmp"], MAIN.format(marker=world["marker"]), files={"helper.py": "X = 1\n"})
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    env = doc["environment"]
    assert env["asked"] == "auto"
    assert env["chosen"]["name"] == "beta" and env["chosen"]["path"] == str(world["beta"])
    # The experiment's own module is no import to look for; the others are.
    assert env["imports"] == sorted(["numpy", world["marker"], "sys"])
    cands = {c["name"]: c for c in env["candidates"]}
    assert sorted(cands["alpha"]["lacks"]) == sorted([world["marker"], "numpy"])
    system = next(c for c in env["candidates"] if c["path"] == "/usr/bin/python3")
    assert system["lacks"] == [world["marker"]]
    assert "imports everything" in env["why"]
    assert f"prefix: {world['beta']}" in p.stderr


def test_auto_refuses_naming_missing_imports_and_environments(world):
    missing = "lbmissing_" + unique("x").split("-")[1]
    exp = write_exp(world["tmp"], f"import numpy\nimport {missing}\nprint('accuracy: 1')\n")
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 2
    msg = doc["error"]["message"]
    assert missing in msg
    for name in ("alpha", "beta", "gamma"):
        assert f"{name} ({world[name]}) lacks" in msg
    # alpha has neither; beta (system site) has numpy.
    assert f"alpha ({world['alpha']}) lacks {missing}, numpy;" in msg
    assert f"beta ({world['beta']}) lacks {missing};" in msg
    # Every environment's line in full, whatever the one-line message had to cut.
    assert f"environment gamma ({world['gamma']}) lacks {missing}, numpy" in doc["warnings"]
    assert not (world["tmp"] / "runs").exists() or not any((world["tmp"] / "runs").iterdir())


def test_auto_prefers_the_projects_own_venv(world):
    exp = write_exp(world["tmp"], "import sys\nprint('prefix:', sys.prefix)\nprint('accuracy: 1')\n")
    make_venv(exp / ".venv", system_site=True)
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    env = doc["environment"]
    assert env["chosen"]["name"] == ".venv" and env["chosen"]["confined"]
    assert env["chosen"]["project"]
    assert "project's own" in env["why"]
    # It ran from the staged copy of the experiment, never from the original.
    prefix = next(l for l in p.stderr.splitlines() if l.startswith("prefix:")).split(None, 1)[1]
    assert prefix.endswith("/exp/.venv") and prefix != str(exp / ".venv")


def test_venvs_beside_the_experiment(world):
    """Two venvs beside the experiment: one with Debian's numpy through the system site, one
    without; only the first has the package the code needs."""
    proj = world["tmp"] / "proj"
    proj.mkdir()
    plain = make_venv(proj / ".venv")
    withsys = make_venv(proj / "venv", system_site=True)
    install_package(withsys, world["marker"] + "_b")
    exp = write_exp(proj, f"import numpy\nimport {world['marker']}_b\nprint('accuracy: 1')\n")
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    env = doc["environment"]
    assert env["chosen"]["path"] == str(withsys)
    assert env["chosen"]["found_by"] == "beside the experiment"
    cands = {c["path"]: c for c in env["candidates"]}
    assert sorted(cands[str(plain)]["lacks"]) == sorted(["numpy", world["marker"] + "_b"])


def test_env_by_name_and_path(world):
    exp = write_exp(world["tmp"], "import sys\nprint('prefix:', sys.prefix)\nprint('accuracy: 1')\n")
    p, doc = run_env(world, exp, "--env", "gamma")
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["path"] == str(world["gamma"])
    assert f"prefix: {world['gamma']}" in p.stderr
    p, doc = run_env(world, exp, "--env", str(world["alpha"]))
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["path"] == str(world["alpha"])
    p, doc = run_env(world, exp, "--env", "nosuchenv")
    assert p.returncode == 2
    assert "nosuchenv" in doc["error"]["message"] and "alpha" in doc["error"]["message"]
    p, doc = run_env(world, exp, "--env", "auto", "--python", PYTHON)
    assert p.returncode == 2 and "give one" in doc["error"]["message"]
    # docker's --env NAME=VALUE keeps working, and -e always sets a variable.
    p, doc = run_env(world, exp, "--env", "FOO=bar", "--python", PYTHON)
    assert p.returncode == 0, p.stderr
    p, doc = run_env(world, exp, "-e", "gamma", "--python", PYTHON)
    assert p.returncode == 2 and "NAME=VALUE" in doc["error"]["message"]


def test_yaml_env_names_a_conda_env(world):
    exp = write_exp(world["tmp"], "import sys\nprint('prefix:', sys.prefix)\nprint('accuracy: 1')\n",
                    yaml="env: gamma\n")
    p, doc = run_env(world, exp)
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["name"] == "gamma"
    assert doc["environment"]["chosen"]["project"]
    exp2 = write_exp(world["tmp"], "print('accuracy: 1')\n", yaml="env: nosuch\n", name="exp2")
    p, doc = run_env(world, exp2)
    assert p.returncode == 2 and "env: 'nosuch'" in doc["error"]["message"]


def test_environment_yml_name_is_the_project_env(world):
    exp = write_exp(world["tmp"], "print('accuracy: 1')\n",
                    files={"environment.yml": "name: alpha\ndependencies:\n  - python=3.11\n"})
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["name"] == "alpha"
    assert doc["environment"]["chosen"]["found_by"] == "environment.yml name:"


def test_optional_imports_are_not_required(world):
    """An import inside `try: ... except ImportError` is optional: auto does not need it."""
    missing = "lbmissing_" + unique("x").split("-")[1]
    exp = write_exp(world["tmp"], f"""
        try:
            import {missing}
        except ImportError:
            {missing} = None
        try:
            import {missing}_b
        except (OSError, ModuleNotFoundError) as e:
            pass
        import numpy
        print("accuracy: 1")
        """)
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["imports"] == ["numpy"]
    exp2 = write_exp(world["tmp"], f"try:\n    import {missing}\nexcept ValueError:\n    pass\n"
                     "print('accuracy: 1')\n", name="exp2")
    p, doc = run_env(world, exp2, "--env", "auto")
    assert p.returncode == 2 and missing in doc["error"]["message"]


def test_rerun_chooses_the_environment_again(world):
    exp = write_exp(world["tmp"], "import sys\nprint('prefix:', sys.prefix)\nprint('accuracy: 1')\n")
    make_venv(exp / ".venv", system_site=True)
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["interpreter"]["named_by"] == "env" and man["interpreter"]["env_asked"] == "auto"
    r = labbox("rerun", "--json", "--runs-dir", world["tmp"] / "runs", doc["id"], env=world["env"])
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    assert again["environment"]["chosen"]["name"] == ".venv"
    assert again["environment"]["chosen"]["confined"] is True


def test_yaml_env_wins_over_the_experiments_venv(world):
    exp = write_exp(world["tmp"], "print('accuracy: 1')\n", yaml="env: beta\n",
                    files={"environment.yml": "name: alpha\n"})
    make_venv(exp / ".venv")
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["name"] == "beta"
    (exp / "labbox.yaml").unlink()
    p, doc = run_env(world, exp, "--env", "auto")
    assert p.returncode == 0, p.stderr
    assert doc["environment"]["chosen"]["name"] == ".venv"
    assert doc["environment"]["chosen"]["confined"] is True
