"""labbox run --mode ssh against a real sshd (tests/services/sshd): a separate test host in its
own network namespace, reached through a veth pair, with its own user and keys. Checked from
the remote side: the remote sandbox's isolation is reported, the degraded path says it is not
isolated, a host without labbox is refused, an unreachable host is 125, and after the budget,
SIGTERM to labbox or a cut link nothing of the run is left on the host.

labbox runs the ssh on PATH: the service's SSH_BIN holds an `ssh` that reads its config (the
Host aliases lbssh-test and lbssh-down), so the tests put it first on PATH, as a person would
(`PATH=SSH_BIN:$PATH ssh -v lbssh-test true`). The remote labbox is a copy of LABBOX_BIN in the
test user's ~/bin, which is on that user's PATH. Needs root; never skipped silently."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import GATE_SPAWN, LABBOX, REPO, labbox, run_exp, unique, wait_for, write_exp

# One test host for the session's worker (make check runs the suites with pytest-xdist,
# --dist loadgroup).
pytestmark = pytest.mark.xdist_group("sshd")

SERVICE = REPO / "tests" / "services" / "sshd"
HOST = "lbssh-test"
DOWN = "lbssh-down"


class Sshd:
    def __init__(self, info, state):
        self.info = info
        self.state = state
        self.env = dict(os.environ, PATH=f"{info['SSH_BIN']}:{os.environ.get('PATH', '/usr/bin:/bin')}")
        self.home = Path(info["SSH_HOME"])
        self.user = info["SSH_USER"]
        self.remote_labbox = self.home / "bin" / "labbox"

    def ssh(self, command, timeout=60):
        return subprocess.run(["ssh", "-o", "BatchMode=yes", HOST, command], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def procs(self, marker):
        """The host's processes whose command line carries MARKER, as the host lists them."""
        out = self.ssh("ps -eo pid=,args=")
        assert out.returncode == 0, out.stderr
        return [l for l in out.stdout.splitlines() if marker in l and "ps -eo" not in l]

    def exists(self, path):
        return self.ssh(f"test -e '{path}'").returncode == 0

    def install_labbox(self, path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(LABBOX, path)
        os.chmod(path, 0o755)

    @contextlib.contextmanager
    def without_labbox(self):
        """No labbox on the remote PATH for the duration."""
        off = self.home / "labbox.off"
        self.remote_labbox.rename(off)
        try:
            yield
        finally:
            off.rename(self.remote_labbox)


@pytest.fixture(scope="session")
def sshd():
    if os.geteuid() != 0:
        pytest.fail("the ssh tests need root to start the test host (make check runs as root)",
                    pytrace=False)
    state = Path(tempfile.mkdtemp(prefix="labbox-sshd-", dir="/var/tmp"))
    out = subprocess.run([str(SERVICE), "start", str(state)], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        subprocess.run([str(SERVICE), "stop", str(state)], timeout=60)
        pytest.fail(f"tests/services/sshd start failed:\n{out.stdout}\n{out.stderr}",
                    pytrace=False)
    info = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l and not l.startswith("#"))
    s = Sshd(info, state)
    s.install_labbox(s.remote_labbox)
    yield s
    subprocess.run([str(SERVICE), "stop", str(state)], timeout=60)
    shutil.rmtree(state, ignore_errors=True)


def srun(sshd, expdir, runs, *opts, host=HOST, **kw):
    return run_exp(expdir, runs, "--mode", "ssh", "--host", host, *opts, env=sshd.env,
                   python="python3", **kw)


def sleeper(tmp_path, marker):
    return write_exp(tmp_path, f"""
        import json, sys, time
        with open("results.json", "w") as f:
            json.dump({{"cond_a": {{"loss": 0.25}}}}, f)
        print("condition: cond_a")
        print("loss: 0.25")
        print("started", sys.argv[1], flush=True)
        time.sleep(600)
    """)


def assert_nothing_left(sshd, marker, remote_dir):
    gone = wait_for(lambda: sshd.procs(marker) == [], 60)
    assert gone, f"processes of the run left on the host: {sshd.procs(marker)}"
    if remote_dir:
        assert wait_for(lambda: not sshd.exists(remote_dir), 60), f"{remote_dir} left on the host"


def test_quickstart_over_ssh(sshd, tmp_path):
    local = run_exp(REPO / "examples" / "quickstart", tmp_path / "local")
    assert local.rc == 0, local.why()
    r = srun(sshd, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.result
    assert res["status"] == "completed"
    # The same result.json fields as the local backend's.
    assert set(local.result) <= set(res), set(local.result) - set(res)
    be = res["backend"]
    assert be["name"] == "ssh" and be["host"] == HOST
    assert be["version"] and be["isolated_by"].startswith("labbox")
    assert be["remote_user"] == sshd.user
    # --python names the interpreter there.
    assert be["command"][be["command"].index("--python") + 1] == "python3"
    vals = res["metrics"]["conditions"]
    assert set(vals) == {"lambda_0.01", "lambda_1", "lambda_100"}
    assert "results.json" in res["metrics"]["files"]
    assert (r.exp / "results.json").is_file()
    # The remote sandbox's own isolation block, as the remote labbox reported it.
    remote = r.file_json("remote/result.json")
    assert res["isolation"] == remote["isolation"]
    assert res["isolation"]["namespaces"]["pid"] is True and res["isolation"]["seccomp"] is True
    assert res["isolation"]["network"] == "none"
    # the remote labbox's gate ran there, under this run's policy (standard, so on), said
    # so here
    assert res["runtime_gate"]["installed"] is False
    assert "remote/result.json" in res["runtime_gate"]["note"], res["runtime_gate"]
    assert "policy standard, so mode on" in res["runtime_gate"]["note"], res["runtime_gate"]
    g = remote["runtime_gate"]
    assert g["installed"] is True and g["mode"] == "on" and g["policy"] == "standard", g
    man = r.file_json("manifest.json")
    assert man["config"]["mode"] == "ssh" and man["config"]["host"] == HOST
    assert "main.py" in man["files"]
    assert (r.run_dir / "environment.txt").read_text().startswith("Python 3.")
    assert "test_mse" in r.log()
    assert not sshd.exists(be["remote_dir"])


def test_runtime_gate_asked_here_holds_on_the_host(sshd, tmp_path):
    """The remote labbox gets this run's policy and gate mode: asked `on` under permissive
    here, its gate refuses the process the static check let through."""
    exp = write_exp(tmp_path, GATE_SPAWN)
    r = srun(sshd, exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on")
    assert r.rc == 0, r.why()
    assert "labbox runtime gate refused os.system" in r.log(), r.log()
    g = r.file_json("remote/result.json")["runtime_gate"]
    assert g["mode"] == "on" and g["enforced"] is True and g["policy"] == "permissive", g
    assert any(e["event"] == "os.system" and e["refused"] for e in g["events"]), g
    assert "mode on" in r.result["runtime_gate"]["note"], r.result["runtime_gate"]
    # Uncaught there, the refusal is this run's verdict too: read from the remote labbox's
    # record, as the diagnosis takes no refusal the gate did not record.
    unc = write_exp(tmp_path / "unc", "import os\nos.system('true')\nprint('accuracy: 1')\n")
    r = srun(sshd, unc, tmp_path / "runs3", "--policy", "permissive", "--runtime-gate", "on")
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert r.result["failure"]["gate_event"] == "os.system", r.why()
    # And rejected code is still rejected, here, before anything reaches the host.
    bad = write_exp(tmp_path / "bad", "import subprocess\nsubprocess.run(['true'])\n")
    r = srun(sshd, bad, tmp_path / "runs2", "--policy", "strict")
    assert r.rc == 3, r.why()


def test_remote_labbox_named(sshd, tmp_path):
    other = sshd.home / "opt" / "labbox"
    sshd.install_labbox(other)
    exp = write_exp(tmp_path, "print('answer: 42')\n")
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs", "--remote-labbox", other)
    assert r.rc == 0, r.why()
    assert r.result["backend"]["remote_labbox"] == str(other)
    assert r.result["metrics"]["values"]["answer"] == 42


def test_refused_without_remote_labbox(sshd, tmp_path):
    exp = write_exp(tmp_path, "open('ran.txt', 'w').write('x')\nprint('x: 1')\n")
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert HOST in msg and "--install-remote" in msg and "--allow-degraded isolation" in msg
    assert f"ssh {HOST} labbox --version" in msg
    assert r.result["backend"]["name"] == "ssh"  # never run locally instead
    assert not (r.exp / "ran.txt").exists()


def test_degraded_says_not_isolated(sshd, tmp_path):
    exp = write_exp(tmp_path, """
        import json
        json.dump({"acc": 0.5}, open("results.json", "w"))
        print("accuracy: 0.75")
    """)
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs", "--allow-degraded", "isolation", "--budget", "60")
    assert r.rc == 0, r.why()
    iso = r.result["isolation"]
    assert iso["isolated_by"] == "nothing" and "not isolated by labbox" in iso["summary"]
    assert iso["namespaces"]["pid"] is False and iso["seccomp"] is False
    be = r.result["backend"]
    assert be["name"] == "ssh" and "not isolated" in be["isolated_by"]
    assert be["command"][:1] == ["timeout"] and be["command"][-1] == "main.py"
    assert r.result["metrics"]["values"]["accuracy"] == 0.75
    assert r.result["metrics"]["files"]["results.json"] == {"acc": 0.5}
    assert (r.run_dir / "environment.txt").read_text().startswith("Python 3.")
    assert not sshd.exists(be["remote_dir"])
    # no runtime gate there, and result.json says so and why
    g = r.result["runtime_gate"]
    assert g["installed"] is False and g["enforced"] is False
    assert "no labbox on the ssh host" in g["note"] and "nothing watches" in g["note"], g


def test_degraded_refuses_limits_it_cannot_hold(sshd, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs", "--allow-degraded", "isolation", "--memory", "256m")
    assert r.rc == 125, r.why()
    assert "--memory" in r.result["infra_error"]["message"]


def test_hidden_paths_are_hidden_on_the_host(sshd, tmp_path):
    """--hide names a path of the ssh host, and the labbox there hides it; without a labbox
    there nothing could, and the run is refused rather than run with it in sight."""
    secret = unique("secret")
    data = Path(tempfile.mkdtemp(prefix="labbox-hide-", dir="/var/tmp"))
    try:
        (data / "private").mkdir()
        (data / "private" / "key.txt").write_text(secret)
        (data / "public.txt").write_text("visible")
        for p in [data, data / "private"]:
            os.chmod(p, 0o755)
        for p in [data / "private" / "key.txt", data / "public.txt"]:
            os.chmod(p, 0o644)
        exp = write_exp(tmp_path, """
            import os
            print("public:", open("/data/public.txt").read())
            print("private:", sorted(os.listdir("/data/private")))
        """)
        r = srun(sshd, exp, tmp_path / "runs", "-v", f"{data}:/data", "--hide", data / "private")
        assert r.rc == 0, r.why()
        log = r.log()
        assert secret not in log, log
        assert "public: visible" in log and "private: []" in log, log
        with sshd.without_labbox():
            r = srun(sshd, exp, tmp_path / "runs2", "--allow-degraded", "isolation",
                     "--hide", data / "private")
        assert r.rc == 125, r.why()
        assert "--hide" in r.result["infra_error"]["message"]
    finally:
        shutil.rmtree(data, ignore_errors=True)


def test_unreachable_host_is_125(sshd, tmp_path):
    exp = write_exp(tmp_path, "open('ran.txt', 'w').write('x')\nprint('x: 1')\n")
    r = srun(sshd, exp, tmp_path / "runs", host=DOWN)
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert DOWN in msg and f"ssh -v {DOWN} true" in msg
    assert r.result["backend"]["name"] == "ssh"
    assert not (r.exp / "ran.txt").exists()  # never a fallback to local


def test_bad_host_is_a_usage_error(sshd, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = labbox("run", "--json", "--mode", "ssh", "--host", "-oProxyCommand=touch /tmp/x",
               "--runs-dir", tmp_path / "runs", exp, env=sshd.env)
    assert r.returncode == 2, r.stderr
    assert json.loads(r.stdout)["schema"] == "labbox.error/1"
    r = labbox("run", "--json", "--mode", "ssh", "--runs-dir", tmp_path / "runs", exp, env=sshd.env)
    assert r.returncode == 2 and "host" in json.loads(r.stdout)["error"]["message"]


def test_budget_ends_the_remote_run(sshd, tmp_path):
    marker = unique("lbssh")
    exp = sleeper(tmp_path, marker)
    r = srun(sshd, exp, tmp_path / "runs", "--budget", "3", "--grace", "1", args=[marker])
    assert r.rc == 124, r.why()
    assert r.result["status"] == "timeout" and r.result["timed_out"] is True
    assert r.result["partial"] is True
    assert r.result["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert r.result["metrics"]["files"]["results.json"] == {"cond_a": {"loss": 0.25}}
    assert_nothing_left(sshd, marker, r.result["backend"]["remote_dir"])


def test_budget_degraded(sshd, tmp_path):
    marker = unique("lbssh")
    exp = sleeper(tmp_path, marker)
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs", "--allow-degraded", "isolation", "--budget", "3",
                 "--grace", "1", args=[marker])
    assert r.rc == 124, r.why()
    assert r.result["timed_out"] is True
    assert_nothing_left(sshd, marker, r.result["backend"]["remote_dir"])


def start_and_wait(sshd, exp, runs, marker, *opts):
    cmd = [LABBOX, "run", "--json", "--mode", "ssh", "--host", HOST, "--grace", "1",
           "--runs-dir", str(runs), *opts, str(exp), "--", marker]
    p = subprocess.Popen(cmd, env=sshd.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # With --json the experiment's output is on stderr.
    for line in p.stderr:
        if marker.encode() in line:
            break
    else:
        p.wait()
        raise AssertionError(f"the run never started: {p.stdout.read()!r}")
    return p


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_to_labbox_ends_the_remote_run(sshd, tmp_path, sig):
    marker = unique("lbssh")
    exp = sleeper(tmp_path, marker)
    p = start_and_wait(sshd, exp, tmp_path / "runs", marker)
    assert sshd.procs(marker), "the run is not on the host"
    p.send_signal(sig)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 128 + sig
    doc = json.loads(out)
    assert doc["status"] == "interrupted"
    assert doc["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert_nothing_left(sshd, marker, doc["backend"]["remote_dir"])


def test_killed_labbox_leaves_nothing_on_the_host(sshd, tmp_path):
    marker = unique("lbssh")
    exp = sleeper(tmp_path, marker)
    p = start_and_wait(sshd, exp, tmp_path / "runs", marker)
    p.kill()
    p.wait(timeout=30)
    # The run's remote directory is named after the local run id.
    run_id = next((tmp_path / "runs").iterdir()).name
    assert_nothing_left(sshd, marker, None)
    ls = sshd.ssh(f"ls -d /tmp/labbox-ssh-{run_id}.* 2>/dev/null")
    assert ls.stdout.strip() == "", ls.stdout
    # Its socket directory here goes at the next run.
    assert list(Path("/tmp").glob(f"labbox-sshctl-{p.pid}-*"))
    r = srun(sshd, write_exp(tmp_path, "print('x: 1')\n", name="next"), tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert not list(Path("/tmp").glob(f"labbox-sshctl-{p.pid}-*"))


def test_lost_connection_ends_the_remote_run(sshd, tmp_path):
    if not sshd.info.get("SSH_NETNS"):
        pytest.skip("network namespaces are unavailable here (the test host listens on "
                    "127.0.0.1), so there is no link of its own to cut")
    veth = "lbsshh" + sshd.user[len("lbssh"):]
    marker = unique("lbssh")
    exp = sleeper(tmp_path, marker)
    p = start_and_wait(sshd, exp, tmp_path / "runs", marker)
    subprocess.run(["ip", "link", "set", veth, "down"], check=True)
    try:
        out, _ = p.communicate(timeout=150)
    finally:
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
    assert p.returncode == 125
    doc = json.loads(out)
    assert "connection" in doc["infra_error"]["message"] and HOST in doc["infra_error"]["message"]
    assert doc["metrics"]["conditions"]["cond_a"]["loss"] == 0.25  # what was streamed is kept
    assert_nothing_left(sshd, marker, doc["backend"]["remote_dir"])


def test_install_remote(sshd, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n")
    with sshd.without_labbox():
        r = srun(sshd, exp, tmp_path / "runs", "--install-remote")
    assert r.rc == 0, r.why()
    be = r.result["backend"]
    assert be["installed_by_labbox"] is True
    assert be["remote_labbox"].startswith(be["remote_dir"] + "/")
    assert r.result["isolation"]["namespaces"]["pid"] is True
    assert not sshd.exists(be["remote_dir"])


def test_rerun_goes_to_the_same_host(sshd, tmp_path):
    r = srun(sshd, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    rr = labbox("rerun", "--json", "--runs-dir", tmp_path / "runs", r.result["id"], env=sshd.env)
    assert rr.returncode == 0, rr.stdout[-2000:] + rr.stderr[-2000:]
    doc = json.loads(rr.stdout)
    assert doc["backend"]["name"] == "ssh" and doc["backend"]["host"] == HOST
    assert doc["backend"]["python_asked"] == "python3"
    assert doc["rerun"]["of"] == r.result["id"] and doc["rerun"]["verdict"] == "match"
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["config"]["mode"] == "ssh" and man["config"]["host"] == HOST


def test_labbox_yaml_mode_ssh(sshd, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n", yaml=f"mode: ssh\nhost: {HOST}\n")
    r = labbox("run", "--json", "--runs-dir", tmp_path / "runs", exp, env=sshd.env)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert doc["backend"]["name"] == "ssh" and doc["backend"]["host"] == HOST
    assert doc["metrics"]["values"]["answer"] == 42


def test_secret_env_reaches_the_remote_run(sshd, tmp_path):
    secret = unique("s3cr3t")
    exp = write_exp(tmp_path, """
        import os
        print("has_secret:", int(os.environ.get("LBSSH_TOKEN", "") != ""))
    """)
    env = dict(sshd.env, LBSSH_TOKEN=secret)
    r = run_exp(exp, tmp_path / "runs", "--mode", "ssh", "--host", HOST, "--secret-env",
                "LBSSH_TOKEN", env=env, python="python3")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["has_secret"] == 1
    assert secret not in json.dumps(r.result["backend"])
    assert secret not in (r.run_dir / "manifest.json").read_text()


def test_probe_ssh(sshd):
    r = labbox("probe", "--json", "--mode", "ssh", "--host", HOST, env=sshd.env)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["reachable"] is True and doc["host"] == HOST
    assert doc["remote_labbox"]["version"] and doc["remote_labbox"]["sandbox_works"] is True
    assert doc["remote_labbox"]["probe"]["namespaces"]["pid"] is True
    assert doc["python"]["version"].startswith("3.")
    r = labbox("probe", "--json", "--mode", "ssh", "--host", DOWN, env=sshd.env)
    assert r.returncode == 125
    doc = json.loads(r.stdout)
    assert doc["reachable"] is False and f"ssh -v {DOWN} true" in doc["error"]


def test_gpus_are_the_remote_hosts(sshd, tmp_path):
    """--gpus goes to the remote labbox, which looks for them there (this test host has none,
    so it is refused there, by the host, not here)."""
    if Path("/dev/nvidia0").exists():
        pytest.skip("this machine has a GPU; the refusal below needs a host without one")
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = srun(sshd, exp, tmp_path / "runs", "--gpus", "0")
    assert r.rc == 125, r.why()
    assert r.result["backend"]["name"] == "ssh"
    assert "--gpus=0" in r.result["backend"]["command"]
    assert HOST in r.result["infra_error"]["message"]


def test_volumes_are_the_remote_hosts(sshd, tmp_path):
    data = sshd.home / "data"
    data.mkdir(exist_ok=True)
    (data / "n.txt").write_text("7\n")
    shutil.chown(data, sshd.user)
    shutil.chown(data / "n.txt", sshd.user)
    exp = write_exp(tmp_path, "print('n:', int(open('/data/n.txt').read()))\n")
    r = srun(sshd, exp, tmp_path / "runs", "-v", f"{data}:/data:ro")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["n"] == 7
    assert f"{data}:/data:ro" in r.result["backend"]["command"]


def test_one_connection_per_run(sshd, tmp_path):
    """Every step of a run (setup, copies, the run, the removal) goes through labbox's one
    ControlMaster connection: the host's sshd accepts one login for it."""
    log = sshd.state / "sshd.log"

    def logins():
        return log.read_text(errors="replace").count("Accepted publickey")

    before = logins()
    exp = write_exp(tmp_path, "print('answer: 42')\n")
    r = srun(sshd, exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert wait_for(lambda: logins() - before >= 1, 10)
    assert logins() - before == 1, log.read_text()[-3000:]
