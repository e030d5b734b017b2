"""Nothing the experiment directory names runs on the host.

labbox runs two kinds of programs of its own accord before and after a run: the interpreter
(to learn what it is, to list its packages, to compile the code) and git (to record the commit,
the state and the diff of the repository the experiment lives in). Both are chosen by the
experiment directory when it ships a labbox.yaml naming an interpreter, or a repository whose
configuration names commands. Each hostile directory here would leave a marker file in a host
directory the host user can write if anything it names ever ran outside the sandbox; the host
checks for the marker. The same runs happen as root and, through run-as-user, as an ordinary
user.
"""
import json
import shutil
import os
import subprocess
from pathlib import Path

import pytest

from escape_lib import IS_ROOT, LABBOX, PYTHON, CALL_TIMEOUT, e2e, run_dirs


def labbox_json(*args, cwd=None):
    """`labbox ARGS` whose stdout is one JSON document; returns (rc, doc)."""
    p = subprocess.run([LABBOX, *map(str, args)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT, cwd=cwd)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout:\n{p.stdout[-2000:]}\n"
                             f"stderr:\n{p.stderr[-2000:]}") from None


@pytest.fixture
def markers(tmp_path):
    d = tmp_path / "markers"
    d.mkdir()
    os.chmod(d, 0o777)  # writable by anyone on the host: only the sandbox stops the write

    def check():
        made = sorted(p.name for p in d.iterdir())
        assert not made, f"commands the experiment named ran on the host: {made}"
    yield d
    check()


GOOD_MAIN = 'print("accuracy: 0.5")\n'
# Rejected by the static check under the default policy: must not run, and nothing it names
# may run either.
REJECTED_MAIN = 'import os\nos.system("true")\nprint("accuracy: 0.5")\n'


def wrapper(marker: Path) -> str:
    return f'#!/bin/sh\necho ran > {marker}\nexec {PYTHON} "$@"\n'


# --- the interpreter labbox.yaml names ------------------------------------------------------

@pytest.mark.parametrize("main", ["good", "rejected"])
@pytest.mark.parametrize("how", ["relative", "absolute", "venv"])
def test_yaml_interpreter_is_probed_in_the_sandbox(tmp_path, markers, how, main):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(GOOD_MAIN if main == "good" else REJECTED_MAIN)
    if how == "venv":
        # A venv shipped in the experiment whose python is a script: every run of it (probe,
        # freeze, compile, the run itself) leaves a marker unless it is in the sandbox.
        (exp / ".venv" / "bin").mkdir(parents=True)
        (exp / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
        py = exp / ".venv" / "bin" / "python"
        named = ".venv/bin/python"
    else:
        py = exp / "py.sh"
        named = "./py.sh" if how == "relative" else str(py)
    py.write_text(wrapper(markers / f"{how}-{main}"))
    py.chmod(0o755)
    (exp / "labbox.yaml").write_text(f"python: {named}\n")
    rc, doc = labbox_json("run", "--json", "--runs-dir", tmp_path / "runs", exp)
    if main == "rejected":
        assert rc == 3 and doc["status"] == "rejected", doc
        return
    assert rc == 0 and doc["status"] == "completed", doc
    assert doc["metrics"]["values"]["accuracy"] == 0.5, doc["metrics"]
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["interpreter"]["named_by"] == "labbox.yaml", man["interpreter"]
    assert man["interpreter"]["probed_in_sandbox"] is True, man["interpreter"]
    assert man["packages_listed"] is True, man
    # rerun names the interpreter through the staged labbox.yaml again: still confined
    rc2, doc2 = labbox_json("rerun", "--json", "--runs-dir", tmp_path / "runs", doc["id"])
    assert rc2 == 0, doc2


def test_yaml_interpreter_cannot_expose_host_paths(tmp_path, markers, visible_secret):
    """What a confined interpreter says of itself (sys.prefix) is not used to bind host
    paths into the run: a wrapper claiming the secret's directory as its prefix gets nothing."""
    exp = tmp_path / "exp"
    exp.mkdir()
    secret_dir, secret = visible_secret
    (exp / "py.sh").write_text(
        "#!/bin/sh\n"
        f"case \"$*\" in *sys.prefix*) echo {PYTHON}; echo {secret_dir}; echo {secret_dir};"
        f" echo 3.11.0; echo cpython; exit 0;; esac\n"
        f"exec {PYTHON} \"$@\"\n")
    (exp / "py.sh").chmod(0o755)
    (exp / "labbox.yaml").write_text("python: ./py.sh\n")
    (exp / "main.py").write_text(
        "import glob\n"
        f"for p in glob.glob('{secret_dir}/*'):\n"
        "    try:\n"
        "        print(open(p).read())\n"
        "    except OSError as e:\n"
        "        print('denied', e)\n"
        "print('accuracy: 1')\n")
    rc, doc = labbox_json("run", "--json", "--policy", "permissive", "--runs-dir",
                          tmp_path / "runs", exp)
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert secret not in log, log


@pytest.fixture
def visible_secret():
    """A secret in a directory the sandbox hides: the invoking user's home."""
    import tempfile
    home = Path(os.path.expanduser("~"))
    d = Path(tempfile.mkdtemp(prefix=".labbox-secret-", dir=home))
    tok = "LBXSECRET" + os.urandom(8).hex().upper()
    (d / "key").write_text(tok)
    yield d, tok
    import shutil
    shutil.rmtree(d, ignore_errors=True)


# --- git --------------------------------------------------------------------------------------

def git(repo, *a, check=True):
    return subprocess.run(["git", "-C", str(repo), *a], check=check, capture_output=True,
                          text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                               "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"})


def touch(marker, then="cat"):
    """A command that leaves MARKER, then acts as THEN (a filter passes its input on)."""
    script = marker.parent.parent / f"cmd-{marker.name}-{then}"
    script.write_text(f"#!/bin/sh\necho ran > {marker}\nexec {then}\n")
    script.chmod(0o755)
    return str(script)


def hostile_repo(tmp_path, markers, way, main):
    """A repository holding exp/ whose configuration names a command in one way."""
    repo = tmp_path / "repo"
    exp = repo / "exp"
    exp.mkdir(parents=True)
    (exp / "main.py").write_text(GOOD_MAIN if main == "good" else REJECTED_MAIN)
    (exp / "data.txt").write_text("v0\n")
    os.chmod(tmp_path, 0o755)
    git(repo, "init", "-q")
    m = markers / f"{way}-{main}"
    if way == "nested":
        # A repository inside the experiment, committed as a gitlink: git status asks it for
        # its own state, and its configuration names the command.
        sub = exp / "sub"
        sub.mkdir()
        (sub / "f.txt").write_text("a\n")
        git(sub, "init", "-q")
        git(sub, "add", ".")
        git(sub, "commit", "-qm", "sub")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    attrs = None
    if way == "filter":
        git(repo, "config", "filter.evil.clean", touch(m))
        attrs = "* filter=evil\n"
    elif way == "filter_process":
        git(repo, "config", "filter.evil.process", touch(m, "false"))
        attrs = "* filter=evil\n"
    elif way == "worktree_config":
        git(repo, "config", "extensions.worktreeConfig", "true")
        git(repo, "config", "--worktree", "filter.evil.clean", touch(m))
        attrs = "* filter=evil\n"
    elif way == "include":
        (repo / "evil.cfg").write_text(f'[filter "evil"]\n\tclean = {touch(m)}\n')
        git(repo, "config", "include.path", str(repo / "evil.cfg"))
        attrs = "* filter=evil\n"
    elif way == "include_if":
        (repo / "evil.cfg").write_text(f'[filter "evil"]\n\tclean = {touch(m)}\n')
        git(repo, "config", "includeIf.onbranch:**.path", str(repo / "evil.cfg"))
        attrs = "* filter=evil\n"
    elif way == "info_attributes":
        git(repo, "config", "filter.evil.clean", touch(m))
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    elif way == "fsmonitor":
        git(repo, "config", "core.fsmonitor", touch(m, "false"))
    elif way == "hook":
        hooks = repo / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        h = hooks / "post-index-change"
        h.write_text(f"#!/bin/sh\necho ran > {m}\n")
        h.chmod(0o755)
    elif way == "hooks_path":
        hooks = repo / "myhooks"
        hooks.mkdir()
        h = hooks / "post-index-change"
        h.write_text(f"#!/bin/sh\necho ran > {m}\n")
        h.chmod(0o755)
        git(repo, "config", "core.hooksPath", str(hooks))
    elif way == "textconv":
        git(repo, "config", "diff.evil.textconv", touch(m))
        attrs = "* diff=evil\n"
    elif way == "external_diff":
        git(repo, "config", "diff.external", touch(m, "true"))
    elif way == "nested":
        sub = exp / "sub"
        git(sub, "config", "filter.evil.clean", touch(m))
        (sub / ".gitattributes").write_text("* filter=evil\n")
        (sub / "f.txt").write_text("changed\n")
        git(sub, "config", "core.fsmonitor", touch(m.with_name(m.name + ".fsmonitor"), "false"))
    if attrs:
        (repo / ".gitattributes").write_text(attrs)
    # An uncommitted change: git must compare it (through the filter) to say what is dirty.
    (exp / "data.txt").write_text("v1\n")
    (exp / "main.py").touch()
    return repo, exp, m


WAYS = ["filter", "filter_process", "worktree_config", "include", "include_if",
        "info_attributes", "fsmonitor", "hook", "hooks_path", "textconv", "external_diff",
        "nested"]


@pytest.mark.parametrize("main", ["good", "rejected"])
@pytest.mark.parametrize("way", WAYS)
def test_repository_commands_never_run_on_the_host(tmp_path, markers, way, main):
    repo, exp, marker = hostile_repo(tmp_path, markers, way, main)
    # The test's own git (run on the host on purpose) shows the command is really named:
    # asking this repository for its state the usual way leaves the marker.
    if way not in ("hook", "hooks_path", "external_diff", "textconv"):
        control = tmp_path / "control"
        subprocess.run(["cp", "-a", str(repo), str(control)], check=True)
        cmarker = Path(str(marker).replace(str(repo), str(control)))
        assert cmarker == marker  # markers live outside the repository
        subprocess.run(["git", "-C", str(control), "status", "--porcelain"],
                       capture_output=True, env={**os.environ, "HOME": "/nonexistent"})
        assert list(markers.iterdir()), f"{way}: the control did not run the command"
        for p in markers.iterdir():
            p.unlink()
    head = git(repo, "rev-parse", "HEAD").stdout.strip()
    rc, doc = labbox_json("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
                          exp)
    assert rc == (0 if main == "good" else 3), doc
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["git"] and man["git"]["commit"] == head, man["git"]
    if way not in ("nested",):
        assert man["git"]["dirty"] is True, man["git"]


@pytest.mark.parametrize("entry", [".", ""])
def test_relative_path_entry_never_finds_the_experiments_python(tmp_path, markers, entry):
    """The default interpreter is python3 on PATH; a PATH with "." (or an empty entry) in
    it must not find the experiment's own executable python3 and run it on the host."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(GOOD_MAIN)
    (exp / "python3").write_text(wrapper(markers / f"pathdot-{entry or 'empty'}"))
    (exp / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{entry}:/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "c"),
           "XDG_STATE_HOME": str(tmp_path / "c-state")}
    for args in (("run", "--json", "--runs-dir", tmp_path / "runs", "."), ("check", "."),
                 ("probe",)):
        subprocess.run([LABBOX, *map(str, args)], cwd=exp, env=env, capture_output=True,
                       timeout=CALL_TIMEOUT)


def test_a_hanging_repository_costs_the_run_little(tmp_path, markers):
    """A filter or fsmonitor that never ends runs in git's sandbox, which has a budget of its
    own: the run's verdict comes, and says the git state was not read."""
    repo, exp, marker = hostile_repo(tmp_path, markers, "filter", "good")
    hang = repo / "hang.sh"  # inside the repository: git's sandbox sees it
    hang.write_text("#!/bin/sh\nwhile :; do :; done\n")
    hang.chmod(0o755)
    git(repo, "config", "filter.evil.clean", str(hang))
    rc, doc = labbox_json("run", "--json", "--budget", "5", "--python", PYTHON, "--runs-dir",
                          tmp_path / "runs", exp)
    assert rc == 0, doc
    # git's own budget ended it (no wall-clock assertion: the record says what happened)
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["git"]["commit"] is None and "did not finish" in man["git"]["error"], man["git"]


# --- environments the experiment ships or names (run --env auto) ---------------------------

@pytest.mark.parametrize("named", ["dotvenv", "labbox_yaml", "environment_yml"])
def test_env_auto_probes_the_experiments_environments_in_the_sandbox(tmp_path, markers, named):
    """--env auto finds the experiment's own .venv, the env: its labbox.yaml names and the
    prefix: its environment.yml names; each interpreter is a script that would leave a marker
    on the host. They are asked what they are and what they import inside the sandbox only."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("import numpy\n" + GOOD_MAIN)
    if named == "dotvenv":
        envdir = exp / ".venv"
    elif named == "labbox_yaml":
        envdir = exp / "envs" / "mine"
        (exp / "labbox.yaml").write_text("env: envs/mine\n")
    else:
        # A path outside the experiment, chosen by it: confined all the same.
        envdir = tmp_path / "hostile-env"
        (exp / "environment.yml").write_text(f"name: hostile\nprefix: {envdir}\n")
    (envdir / "bin").mkdir(parents=True)
    (envdir / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for name in ("python3", "python"):
        py = envdir / "bin" / name
        py.write_text(wrapper(markers / f"{named}-{name}"))
        py.chmod(0o755)
    rc, doc = labbox_json("run", "--json", "--env", "auto", "--runs-dir", tmp_path / "runs", exp)
    assert rc == 0, doc
    chosen = doc["environment"]["chosen"]
    assert chosen["confined"] is True and chosen["project"] is True, doc["environment"]
    assert chosen["path"] == str(envdir), chosen


@pytest.mark.parametrize("name", ["venv", ".venv", "env"])
def test_env_auto_probes_a_venv_beside_the_experiment_in_the_sandbox(tmp_path, markers, name):
    """A repository of experiments, each in its folder, with a venv at the top: the venv came
    with the checkout as the experiment did, so --env auto asks it what it is and what it
    imports inside the sandbox only."""
    repo = tmp_path / "repo"
    exp = repo / "exp"
    exp.mkdir(parents=True)
    (exp / "main.py").write_text("import numpy\n" + GOOD_MAIN)
    envdir = repo / name
    (envdir / "bin").mkdir(parents=True)
    (envdir / "pyvenv.cfg").write_text("home = /usr/bin\n")
    for py in ("python3", "python"):
        (envdir / "bin" / py).write_text(wrapper(markers / f"beside-{name}-{py}"))
        (envdir / "bin" / py).chmod(0o755)
    rc, doc = labbox_json("run", "--json", "--env", "auto", "--runs-dir", tmp_path / "runs", exp)
    assert rc in (0, 2), doc
    cands = [c for c in doc.get("environment", {}).get("candidates", [])
             if c.get("path") == str(envdir)]
    assert cands, doc.get("environment") or doc


# --- the repair loop: the user's command runs on the host, in a copy of the experiment -------

def test_repair_command_does_not_import_the_experiments_modules(tmp_path, markers):
    """`python3 -c` / `python3 -m` in the copy would put it first on sys.path: an experiment
    that ships json.py would have its code run on the host by the user's repair command."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("raise SystemExit(1)\n")
    (exp / "json.py").write_text(f"open({str(markers / 'json-imported')!r}, 'w').write('x')\n"
                                 "from importlib import import_module\n")
    cmd = f"{PYTHON} -c 'import json, sys; json.load(sys.stdin)'"
    rc, doc = labbox_json("run", "--json", "--repair-cmd", cmd, "--max-repairs", "1",
                          "--runs-dir", tmp_path / "runs", exp)
    assert rc == 1, doc
    assert doc["repair"]["attempts"] >= 1, doc["repair"]


def test_apply_does_not_write_through_the_experiments_links(tmp_path):
    """Code the experiment shares through a link (lib -> ../shared, staged by content) is
    repaired in the copy; --apply does not write the change through the link."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "util.py").write_text("VALUE = 1\n")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "lib").symlink_to(shared)
    (exp / "main.py").write_text("import sys\nsys.path.insert(0, 'lib')\nimport util\n"
                                 "assert util.VALUE == 2\nprint('accuracy: 1')\n")
    cmd = "sed -i 's/VALUE = 1/VALUE = 2/' lib/util.py"
    rc, doc = labbox_json("run", "--json", "--repair-cmd", cmd, "--apply", "--runs-dir",
                          tmp_path / "runs", exp)
    assert (shared / "util.py").read_text() == "VALUE = 1\n"
    assert (exp / "lib").is_symlink()


# --- where labbox writes on the host: never a folder the experiment names --------------------

def test_labbox_yaml_cannot_name_a_host_folder_for_labbox_to_write_into(tmp_path):
    """mode colab writes the worker and every job's staged code into the Drive folder: named
    by the experiment's labbox.yaml, that is any directory of the host the user can write
    (a home, a site-packages), filled with files the experiment chose."""
    victim = tmp_path / "victim"
    victim.mkdir()
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text(GOOD_MAIN)
    (exp / "labbox.yaml").write_text(f"mode: colab\ndrive: {victim}\nbudget: 5\n")
    p = subprocess.run([LABBOX, "run", "--json", "--colab-timeout", "2", "--runs-dir",
                        str(tmp_path / "runs"), str(exp)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert list(victim.iterdir()) == [], "labbox wrote into the folder labbox.yaml named"
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert "--drive" in p.stdout + p.stderr


def _mcp_session(messages, cwd, *server_args):
    """One `labbox mcp` session over stdio: the messages in order, stdin closed once every
    request has its answer; returns the answers by id."""
    proc = subprocess.Popen([LABBOX, "mcp", *server_args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    answers = {}
    try:
        for m in messages:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" not in m:
                continue
            while m["id"] not in answers:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()[-2000:]
                doc = json.loads(line)
                if "id" in doc:
                    answers[doc["id"]] = doc
    finally:
        proc.stdin.close()
        proc.wait(timeout=CALL_TIMEOUT)
    return answers


def test_an_mcp_clients_labbox_yaml_cannot_move_the_run_off_this_hosts_sandbox(tmp_path):
    """The server's starter fixes what an agent may ask for (budget, memory, network, GPUs,
    the root); a labbox.yaml among the agent's files chose the backend as well: mode ssh to a
    host of the starter's ssh configuration, slurm, a container engine, or colab, which
    isolates nothing. The run is this host's sandbox's."""
    root = tmp_path / "root"
    root.mkdir()
    files = {"main.py": GOOD_MAIN,
             "labbox.yaml": "mode: ssh\nhost: lbx-no-such-host.invalid\n"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "redteam", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run", "arguments": {"files": files, "budget": 30}}}
    answers = _mcp_session([init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            call], root, "--root", str(root), "--max-budget", "60",
                           "--allow-degraded", "memory")
    res = answers[2]["result"]
    doc = res.get("structuredContent") or json.loads(res["content"][-1]["text"])
    assert doc.get("backend", {}).get("name") == "local", doc
    assert doc["status"] == "completed", doc


@pytest.mark.parametrize("env", [
    {"PYTHONWARNINGS": "ignore::antigravity.W", "BROWSER": "./browse.sh"},
    {"PYTHONUSERBASE": "ub"},
], ids=["warnings_import", "userbase_pth"])
def test_an_mcp_clients_env_cannot_run_code_before_the_gate(tmp_path, env):
    """The run tool's `env` is the agent's, as labbox.yaml is: it passed any variable on as
    -e, so an agent's PYTHONWARNINGS (a module imported before site: antigravity opening
    BROWSER, the agent's script) or PYTHONUSERBASE (its .pth) ran code before the runtime
    gate, under a record that said enforced. Such variables are refused as labbox.yaml's
    sweep env refuses them; checked from the host: no run ran, no file the script writes."""
    root = tmp_path / "root"
    exp = root / "exp"
    site = exp / "ub" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    (exp / "browse.sh").write_text("#!/bin/sh\necho ran > before_gate.txt\n")
    (exp / "browse.sh").chmod(0o755)
    (site / "zz.pth").write_text("import os; os.system('echo ran > before_gate.txt')\n")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "redteam", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run", "arguments": {"expdir": "exp", "budget": 30, "env": env}}}
    answers = _mcp_session([init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            call], root, "--root", str(root), "--max-budget", "60",
                           "--allow-degraded", "memory")
    res = answers[2]["result"]
    doc = res.get("structuredContent") or json.loads(res["content"][-1]["text"])
    ran = list(root.glob("**/before_gate.txt"))
    assert not ran and doc.get("status") != "completed", (
        f"the agent's env {env} ran its code before the gate: {json.dumps(doc.get('runtime_gate'))}")
    assert res.get("isError") and doc.get("schema") == "labbox.error/1", doc
    assert any(k in doc["error"]["message"] for k in env), doc


@pytest.mark.parametrize("where", ["python", "python_linked", "environment"])
def test_an_mcp_clients_interpreter_is_never_run_on_the_host(tmp_path, where):
    """The run and check tools' `python` became --python PATH and the run tool's
    `environment` --env PATH (which had to lie under the root): labbox probes both on the
    host, being the user's on the command line, unless they lie inside the experiment. An
    agent that wrote a script into its workspace beside the experiment had it run on the
    host as the server's user (root here) at the probe, before any sandbox. Such paths are
    refused. Checked from the host: the script's marker, which the sandbox's uid could not
    write, is not there."""
    root = tmp_path / "root"
    exp = root / "exp"
    exp.mkdir(parents=True)
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    host_side = tmp_path / "host_side"
    host_side.mkdir()
    os.chmod(host_side, 0o700)  # the sandbox's uid (65534 as root) cannot write here
    marker = host_side / "ran_on_the_host"
    venv = root / "tools" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    tool = venv / "bin" / "python"
    tool.write_text(f"#!/bin/sh\nid -u > {marker} 2>/dev/null\nexec {PYTHON} \"$@\"\n")
    tool.chmod(0o755)
    if where == "python_linked":
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "py").symlink_to(tool)
    arg = {"python": {"python": str(tool)},
           "python_linked": {"python": str(tmp_path / "elsewhere" / "py")},
           "environment": {"environment": "tools/venv"}}[where]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "redteam", "version": "1"}}}
    names = ["run"] if where == "environment" else ["run", "check"]
    calls = [{"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
              "params": {"name": name, "arguments": {"expdir": "exp", **arg,
                                                       **({"budget": 30} if name == "run" else {})}}}
             for i, name in enumerate(names)]
    answers = _mcp_session([init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            *calls], root, "--root", str(root), "--max-budget", "60",
                           "--allow-degraded", "memory")
    assert not marker.exists(), (
        f"the agent's {arg} ran on the host as uid {marker.read_text().strip()}")
    for i in range(len(names)):
        res = answers[2 + i]["result"]
        doc = res.get("structuredContent") or json.loads(res["content"][-1]["text"])
        assert res.get("isError") and doc["error"]["limit"] == "root", doc


@pytest.mark.parametrize("cmd", ["run", "check", "sweep"])
@pytest.mark.parametrize("link", ["bin", "python"])
def test_a_venv_linked_out_of_the_experiment_is_never_run_on_the_host(tmp_path, cmd, link):
    """A shipped venv whose bin/ (or bin/python3) is a link to the system's: every resolved
    path lies outside the experiment, but Python reads the pyvenv.cfg one level above the
    name it was started by, so the venv's .pth ran on the host at the probe. Every
    directory on the way, as named, makes the interpreter the experiment's."""
    exp = tmp_path / "exp"
    site = exp / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    (exp / ".venv" / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n")
    host_side = tmp_path / "host_side"
    host_side.mkdir()
    os.chmod(host_side, 0o700)
    marker = host_side / "ran_on_the_host"
    (site / "zz_host.pth").write_text(
        f"import os; open({str(marker)!r}, 'w').write(str(os.getuid()))\n")
    if link == "bin":
        (exp / ".venv" / "bin").symlink_to("/usr/bin")
    else:
        (exp / ".venv" / "bin").mkdir()
        (exp / ".venv" / "bin" / "python3").symlink_to(os.path.realpath(PYTHON))
    args = {"check": ["check"],
            "run": ["run", "--runs-dir", str(tmp_path / "runs")],
            "sweep": ["sweep", "--runs-dir", str(tmp_path / "runs"), "--seeds", "0-1"]}[cmd]
    p = subprocess.run([LABBOX, *args, "--python", "exp/.venv/bin/python3", "exp"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), (
        f"labbox {cmd} ran the experiment's .pth on the host as uid {marker.read_text()}",
        p.stdout[-1500:], p.stderr[-1500:])


@pytest.mark.parametrize("layout", ["venv", "script"])
def test_exec_never_runs_a_program_under_a_hidden_home_on_the_host(tmp_path, layout):
    """`labbox exec -- ~/proj/.venv/bin/python3`: to expose what a python under a hidden home
    needs, labbox asked it what it is, on the host, where the venv's .pth files (or a
    script merely named python-something) ran unsandboxed. The command is no more trusted
    than an experiment: it is asked in the sandbox, and still runs as the venv's."""
    home = Path("/home") if IS_ROOT else Path(os.path.expanduser("~"))
    proj = home / f"lb-exec-probe-{os.getpid()}-{layout}"
    host_side = tmp_path / "host_side"
    host_side.mkdir()
    os.chmod(host_side, 0o700)
    marker = host_side / "ran_on_the_host"
    try:
        proj.mkdir()
        os.chmod(proj, 0o755)
        if layout == "venv":
            _venv_with_pth(proj, marker)
            prog = proj / ".venv" / "bin" / "python3"
            args = ["-c", "import sys; print('prefix', sys.prefix)"]
        else:
            (proj / "bin").mkdir()
            prog = proj / "bin" / "python-run"
            prog.write_text(f"#!/bin/sh\nid -u > {marker} 2>/dev/null\necho ran \"$@\"\n")
            prog.chmod(0o755)
            args = ["hello"]
        p = subprocess.run([LABBOX, "exec", "--", str(prog), *args], capture_output=True,
                           text=True, timeout=120)
        assert not marker.exists(), (
            f"labbox exec ran {prog} on the host as uid {marker.read_text().strip()}")
        want = f"prefix {proj / '.venv'}" if layout == "venv" else "ran hello"
        assert want in p.stdout, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    finally:
        shutil.rmtree(proj, ignore_errors=True)


# Both cases make and remove the same ~/bin: run side by side, one removed it while the
# other's program was still in it.
@pytest.mark.xdist_group("home_bin")
@pytest.mark.parametrize("how", ["exec", "run"])
def test_a_program_in_the_homes_bin_shows_nothing_else_of_the_home(tmp_path, how):
    """~/bin/python3 (a link to the system's) or any program in ~/bin: the directory above
    bin/ was exposed as the program's installation, and that is the whole home, .ssh and all,
    to an untrusted experiment. A home (or a hidden root, or what holds one) is never shown:
    the program alone is."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    bindir = home / "bin"
    made = not bindir.exists()
    bindir.mkdir(exist_ok=True)
    tag = f"lbtest{os.getpid()}"
    prog = bindir / (f"python3-{tag}" if how == "run" else f"cat-{tag}")
    prog.symlink_to(os.path.realpath(PYTHON) if how == "run" else "/bin/cat")
    secret_file = home / f".{tag}-secret"
    secret = f"SECRET{tag}{os.urandom(4).hex()}"
    secret_file.write_text(secret)
    try:
        if how == "exec":
            p = subprocess.run([LABBOX, "exec", "--", str(prog), str(secret_file)],
                               capture_output=True, text=True, timeout=CALL_TIMEOUT)
            out = p.stdout + p.stderr
        else:
            exp = tmp_path / "exp"
            exp.mkdir()
            (exp / "main.py").write_text(
                "import os\n"
                f"try:\n    print(open({str(secret_file)!r}).read())\n"
                "except OSError as e:\n    print('refused', e.errno)\n"
                f"print('listing', sorted(os.listdir({str(home)!r})))\n"
                "print('accuracy: 1')\n")
            p = subprocess.run([LABBOX, "run", "--json", "--policy", "permissive", "--runs-dir",
                                str(tmp_path / "runs"), "--python", str(prog), str(exp)],
                               capture_output=True, text=True, timeout=CALL_TIMEOUT)
            doc = json.loads(p.stdout)
            out = (Path(doc["run_dir"]) / "run.log").read_text()
            # the interpreter named in ~/bin still runs the experiment
            assert doc["status"] == "completed", (doc.get("failure"), out[-1500:])
            assert f"'{secret_file.name}'" not in out, out[-1500:]
        assert secret not in out, out[-1500:]
    finally:
        secret_file.unlink()
        prog.unlink()
        if made and not any(bindir.iterdir()):
            bindir.rmdir()


def _venv_with_pth(exp, marker, name=".venv"):
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(exp / name)], check=True,
                   timeout=120)
    site = next((exp / name / "lib").glob("python3*/site-packages"))
    (site / "zz_host.pth").write_text(
        f"import os; os.system('id -u > {marker} 2>/dev/null')\n")


@pytest.mark.parametrize("cmd", ["run", "check", "run_env"])
def test_a_venv_of_the_experiment_named_by_python_is_never_run_on_the_host(tmp_path, cmd):
    """`--python exp/.venv/bin/python` is the natural way to use a project's venv. Its
    bin/python links to the system's, so labbox took it for the user's interpreter outside
    the experiment and probed it on the host; the interpreter reads the pyvenv.cfg beside the
    name it was started by, so the venv's .pth files ran there, unsandboxed (as root here),
    at `labbox run` and `labbox check` alike. An interpreter named in a directory of the
    experiment is the experiment's code and is probed in the sandbox. Checked from the host:
    no marker in a directory the sandbox's uid cannot write."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    host_side = tmp_path / "host_side"
    host_side.mkdir()
    os.chmod(host_side, 0o700)
    marker = host_side / "ran_on_the_host"
    # --env PATH likewise, for a venv discovery does not find by its name
    _venv_with_pth(exp, marker, "myenv" if cmd == "run_env" else ".venv")
    args = ["check"] if cmd == "check" else ["run", "--allow-degraded", "gate", "--runs-dir",
                                             str(tmp_path / "runs")]
    how = ["--env", "exp/myenv"] if cmd == "run_env" else ["--python", "exp/.venv/bin/python"]
    p = subprocess.run([LABBOX, *args, *how, "exp"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert not marker.exists(), (
        f"labbox {cmd} ran the experiment's .pth on the host as uid {marker.read_text().strip()}")
    # and the venv still works, from the sandbox (a --python relative to here is found); a
    # run's gate is on, so the shell the .pth starts there is the exec guard's to kill
    assert "accuracy: 1" in p.stdout or cmd == "check", (p.stdout[-1500:], p.stderr[-1500:])
    refused = cmd != "check" and p.returncode == 1 and \
        "failure: gate_refused: the sandbox killed a process" in p.stdout
    assert p.returncode == 0 or refused, (p.stdout[-1500:], p.stderr[-1500:])


def test_a_rerun_never_probes_on_the_host_what_an_experiments_interpreter_said(tmp_path):
    """An interpreter of the experiment is probed in the sandbox, and what it says of itself
    (sys.executable, which argv[0] sets) is recorded, moved into the run's exp/. rerun passed
    that path on as the user's --python, so it was probed on the host: a script of the
    experiment's choosing ran there unsandboxed. It is now named again inside the copy the
    rerun runs."""
    import shutil
    bash = shutil.which("bash")
    if not bash:
        pytest.skip("no bash for exec -a")
    exp = tmp_path / "exp"
    (exp / ".venv" / "bin").mkdir(parents=True)
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    host_side = tmp_path / "host_side"
    host_side.mkdir()
    os.chmod(host_side, 0o700)
    marker = host_side / "ran_on_the_host"
    py = exp / ".venv" / "bin" / "python"
    py.write_text(f"#!{bash}\nexec -a {exp}/named.sh {PYTHON} \"$@\"\n")
    (exp / "named.sh").write_text(f"#!/bin/sh\nid -u > {marker} 2>/dev/null\nexec {PYTHON} \"$@\"\n")
    py.chmod(0o755)
    (exp / "named.sh").chmod(0o755)
    runs = tmp_path / "runs"
    subprocess.run([LABBOX, "run", "--allow-degraded", "gate", "--runs-dir", str(runs),
                    "--python", str(py), str(exp)], capture_output=True, text=True, timeout=300)
    ids = [d.name for d in runs.iterdir() if (d / "manifest.json").exists()]
    assert ids, "the first run left no manifest"
    marker.unlink(missing_ok=True)  # only the rerun's probe is looked at
    subprocess.run([LABBOX, "rerun", "--runs-dir", str(runs), ids[0]], capture_output=True,
                   text=True, timeout=300)
    assert not marker.exists(), (
        f"labbox rerun ran the experiment's {exp}/named.sh on the host as uid "
        f"{marker.read_text().strip()}")


FAKE_R = r"""
#include <stdio.h>
#include <string.h>
/* An "R" of the experiment's: to the probe it says its installation is PFX; to the check's
 * parser that every file parses; run, it prints what it can read at RD. */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "-e") && i + 1 < argc) {
        if (strstr(argv[i + 1], "parse(")) {
            int a = 0;
            for (int j = 1; j < argc; j++) {
                if (a) printf("O\t%s\n", argv[j]);
                if (!strcmp(argv[j], "--args")) a = 1;
            }
            return 0;
        }
        printf("V\t4.2.2\nP\t%s\n", PFX);
        for (int j = 1; j < argc; j++) if (!strcmp(argv[j], "--freeze")) printf("K\tfake==1\n");
        return 0;
    }
    char buf[256] = "(unreadable)";
    FILE *f = fopen(RD, "r");
    if (f) { fgets(buf, sizeof buf, f); fclose(f); buf[strcspn(buf, "\n")] = 0; }
    printf("acc: 1\nleak: %s\n", buf);
    return 0;
}
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="a C compiler builds the experiment's fake R")
def test_an_interpreter_of_the_experiments_cannot_name_what_the_run_sees(tmp_path):
    """`--interpreter exp/bin/R`, a program of the experiment's, says in the probe that its
    installation is a directory the run cannot see (under /tmp here); what it says of itself
    is not bound into the run."""
    secret = tmp_path / "secret"
    secret.mkdir()
    tok = "LBXSECRET" + os.urandom(8).hex().upper()
    (secret / "token").write_text(tok + "\n")
    exp = tmp_path / "exp"
    (exp / "bin").mkdir(parents=True)
    (exp / "main.R").write_text('cat("acc: 1\\n")\n')
    src = tmp_path / "fakeR.c"
    src.write_text(FAKE_R)
    subprocess.run(["cc", "-static", "-O", f'-DPFX="{secret}"', f'-DRD="{secret}/token"',
                    "-o", str(exp / "bin" / "R"), str(src)], check=True)
    os.chmod(tmp_path, 0o755)
    subprocess.run(["chmod", "-R", "o+rX", str(tmp_path)], check=True)
    p = subprocess.run([LABBOX, "run", "--runs-dir", str(tmp_path / "runs"), "--interpreter",
                        str(exp / "bin" / "R"), str(exp)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert tok not in p.stdout + p.stderr
    assert "leak: (unreadable)" in p.stdout + p.stderr, (p.returncode, p.stdout, p.stderr)
    for rd in run_dirs(tmp_path / "runs"):
        for f in rd.rglob("*"):
            if f.is_file():
                assert tok not in f.read_bytes().decode("utf-8", "replace"), f


FAKE_R_PROBE = r"""
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
/* An "R" of the experiment's whose probe answer says how many processes it could start and
 * whether it could read an earlier run's manifest (its -e values); run, it prints a metric. */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (!strcmp(argv[i], "-e") && i + 1 < argc) {
        if (strstr(argv[i + 1], "parse(")) {
            int a = 0;
            for (int j = 1; j < argc; j++) {
                if (a) printf("O\t%s\n", argv[j]);
                if (!strcmp(argv[j], "--args")) a = 1;
            }
            return 0;
        }
        int n = 0;
        for (; n < 64; n++) {
            pid_t p = fork();
            if (p < 0) break;
            if (p == 0) { sleep(2); _exit(0); }
        }
        const char *seen = "none";
        glob_t g;
        if (glob(EXP "/.labbox/runs/*/manifest.json", 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++) {
                char buf[65536];
                FILE *f = fopen(g.gl_pathv[k], "r");
                size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
                if (f) fclose(f);
                buf[len] = 0;
                if (strstr(buf, TOKEN)) seen = "seen";
            }
        }
        printf("V\t4.2.2-%d-%s\n", n, seen);
        while (wait(NULL) > 0) {}
        return 0;
    }
    printf("acc: 1\n");
    return 0;
}
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="a C compiler builds the experiment's fake R")
def test_the_probe_of_an_interpreter_of_the_experiments_has_the_runs_view_and_limits(tmp_path):
    """The interpreter the experiment's labbox.yaml names is the experiment's code, and
    answers labbox's probe before the run: in that sandbox it starts no more processes than
    --pids-limit allows the run, and reads no earlier run's record (run from inside the
    experiment, the records lie in exp/.labbox)."""
    from escape_lib import limit_opts
    tok = "LBXSECRET" + os.urandom(8).hex().upper()
    exp = tmp_path / "exp"
    exp.mkdir()
    (tmp_path / "tools" / "bin").mkdir(parents=True)
    fake = tmp_path / "tools" / "bin" / "R"
    (exp / "main.R").write_text('cat("acc: 1\\n")\n')
    (exp / "labbox.yaml").write_text(f"interpreter: {fake}\n")
    src = tmp_path / "fakeR.c"
    src.write_text(FAKE_R_PROBE)
    subprocess.run(["cc", "-static", "-O", f'-DEXP="{exp}"', f'-DTOKEN="{tok}"',
                    "-o", str(fake), str(src)], check=True)
    subprocess.run(["chmod", "-R", "o+rX", str(tmp_path)], check=True)
    versions = []
    for env_opt in (["-e", f"PEEK={tok}"], []):
        p = subprocess.run([LABBOX, "run", "--json", *env_opt,
                            *limit_opts("pids", "--pids-limit", 16), "."], cwd=exp,
                           capture_output=True, text=True, timeout=CALL_TIMEOUT)
        doc = json.loads(p.stdout)
        assert doc.get("status") == "completed", (p.stdout[-2000:], p.stderr[-2000:])
        man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
        versions.append(man["interpreter"]["version"])
    for v in versions:
        _, forked, seen = v.rsplit("-", 2)
        assert int(forked) < 16 and seen == "none", versions
