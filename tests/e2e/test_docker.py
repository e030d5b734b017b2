"""labbox run --mode docker against a real dockerd (tests/services/dockerd), checked from the
host's side: the same records as the local backend, host files unreadable, no network, the
budget, the memory limit, no container left behind, an unreachable engine refused.

The tests taking `engine` run twice: against that dockerd, and against rootful podman
(`--engine podman`, tests/services/podman, on storage private to this session). The image is
labbox-test:py3, built by debootstrap and imported into each engine (`docker import`,
`podman import`; no registry). Needs root; never skipped silently: without root, dockerd or
podman the tests fail and say why."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, labbox, run_exp, unique, write_exp

# One dockerd and one podman store for the session's worker (make check runs the suites with
# pytest-xdist, --dist loadgroup).
pytestmark = pytest.mark.xdist_group("engines")

SERVICE = REPO / "tests" / "services" / "dockerd"
IMAGE = "labbox-test:py3"


@pytest.fixture(scope="session")
def dockerd():
    if os.geteuid() != 0:
        pytest.fail("the docker tests need root to start dockerd (make check runs as root)",
                    pytrace=False)
    state = Path(tempfile.mkdtemp(prefix="labbox-dockerd-", dir="/var/tmp"))
    out = subprocess.run([str(SERVICE), "start", str(state)], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        pytest.fail(f"tests/services/dockerd start failed:\n{out.stdout}\n{out.stderr}",
                    pytrace=False)
    host = out.stdout.strip().splitlines()[-1].split("=", 1)[1]
    env = dict(os.environ, DOCKER_HOST=host)
    img = subprocess.run([str(SERVICE), "image", str(state)], capture_output=True, text=True,
                         timeout=1200)
    if img.returncode != 0:
        subprocess.run([str(SERVICE), "stop", str(state)], timeout=60)
        pytest.fail(f"tests/services/dockerd image failed:\n{img.stdout}\n{img.stderr}",
                    pytrace=False)
    yield env
    subprocess.run([str(SERVICE), "stop", str(state)], timeout=60)
    shutil.rmtree(state, ignore_errors=True)


PODMAN_SERVICE = REPO / "tests" / "services" / "podman"


@pytest.fixture(scope="session")
def podman_env():
    """The environment that points podman at this session's private storage."""
    if os.geteuid() != 0:
        pytest.fail("the podman tests need root (rootful podman; make check runs as root)",
                    pytrace=False)
    state = Path(tempfile.mkdtemp(prefix="labbox-podman-", dir="/var/tmp"))
    out = subprocess.run([str(PODMAN_SERVICE), "start", str(state)], capture_output=True,
                         text=True, timeout=1200)
    if out.returncode != 0:
        subprocess.run([str(PODMAN_SERVICE), "stop", str(state)], timeout=120)
        pytest.fail(f"tests/services/podman start failed:\n{out.stdout}\n{out.stderr}",
                    pytrace=False)
    env = dict(os.environ)
    for line in out.stdout.splitlines():
        if line.startswith("CONTAINERS_"):
            k, v = line.split("=", 1)
            env[k] = v
    yield env
    subprocess.run([str(PODMAN_SERVICE), "stop", str(state)], timeout=120)
    shutil.rmtree(state, ignore_errors=True)


class Engine:
    """An engine the tests run labbox against: its name (--engine) and its environment."""

    def __init__(self, name, env):
        self.name, self.env = name, env

    def cli(self, *args, cwd=None):
        return subprocess.run([self.name, *args], env=self.env, capture_output=True,
                              text=True, timeout=60, cwd=cwd)


@pytest.fixture(scope="session", params=["docker", "podman"])
def engine(request):
    env = request.getfixturevalue("dockerd" if request.param == "docker" else "podman_env")
    return Engine(request.param, env)


def docker(env, *args):
    return subprocess.run(["docker", *args], env=env, capture_output=True, text=True, timeout=60)


def containers_left(env, cli="docker"):
    out = subprocess.run([cli, "ps", "-a", "-q", "--filter", "label=labbox.run"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def left(eng):
    return containers_left(eng.env, eng.name)


def drun(env, expdir, runs, *opts, **kw):
    return run_exp(expdir, runs, "--mode", "docker", "--image", IMAGE, *opts, env=env,
                   python="python3", **kw)


def erun(eng, expdir, runs, *opts, **kw):
    """labbox run --mode docker --engine ENGINE --image labbox-test:py3."""
    return drun(eng.env, expdir, runs, "--engine", eng.name, *opts, **kw)


def test_quickstart_in_docker(engine, tmp_path):
    r = erun(engine, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.file_json("result.json")
    assert res["status"] == "completed"
    assert res["backend"]["name"] == "docker" and res["backend"]["isolated_by"] == "docker"
    assert res["backend"]["engine"] == engine.name and res["backend"]["version"]
    assert res["backend"]["image"] == IMAGE
    vals = res["metrics"]["conditions"]
    assert set(vals) == {"lambda_0.01", "lambda_1", "lambda_100"}
    assert "test_mse" in vals["lambda_1"]
    assert "results.json" in res["metrics"]["files"]
    man = r.file_json("manifest.json")
    assert man["config"]["mode"] == "docker"
    assert "main.py" in man["files"]
    env_txt = (r.run_dir / "environment.txt").read_text()
    assert env_txt.startswith("Python 3.") and "numpy==" in env_txt
    iso = res["isolation"]
    assert iso["no_new_privs"] and iso["capabilities"] == "none"
    assert iso["uid"] == 65534
    assert (r.exp / "results.json").is_file()
    assert left(engine) == []


def test_host_files_and_network_out_of_reach(engine, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    exp = write_exp(tmp_path, f"""
        import socket
        try:
            print("read:", open({str(secret)!r}).read())
        except OSError as e:
            print("no read:", type(e).__name__)
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=3)
            print("net: connected")
        except OSError as e:
            print("net: refused", e)
        print("ok: 1")
    """)
    r = erun(engine, exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "TOP-SECRET" not in log and "no read:" in log
    assert "net: connected" not in log and "net: refused" in log
    assert r.result["isolation"]["network"] == "loopback"


def test_budget_ends_a_sleeping_run(engine, tmp_path):
    exp = write_exp(tmp_path, """
        import json, time
        with open("results.json", "w") as f:
            json.dump({"cond_a": {"loss": 0.25}}, f)
        print("condition: cond_a")
        print("loss: 0.25", flush=True)
        time.sleep(600)
    """)
    r = erun(engine, exp, tmp_path / "runs", "--budget", "3", "--grace", "1")
    assert r.rc == 124, r.why()
    assert r.result["status"] == "timeout" and r.result["timed_out"] is True
    # the signal that ended it, as the local sandbox records it (sleep dies of SIGTERM)
    assert r.result["signal"] in (9, 15) and r.result["exit_code"] is None, r.why()
    assert r.result["partial"] is True, r.why()  # partial results kept
    assert r.result["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert r.result["metrics"]["files"]["results.json"] == {"cond_a": {"loss": 0.25}}
    assert left(engine) == []


def test_dev_shm_is_as_big_as_the_local_sandboxs(engine, tmp_path):
    """Without --shm-size, /dev/shm is the local sandbox's 1g, not the engine's 64m: an
    experiment that writes 200 MiB there (DataLoader workers do) completes in either mode;
    with --shm-size the size given."""
    exp = write_exp(tmp_path, """
        import os
        st = os.statvfs("/dev/shm")
        print("shm_mb:", st.f_blocks * st.f_frsize // (1 << 20))
        with open("/dev/shm/big", "wb") as f:
            for _ in range(200):
                f.write(b"x" * (1 << 20))
        print("written: 1")
    """)
    # The gate refuses open() outside the outputs; the size is what is tested here.
    r = erun(engine, exp, tmp_path / "runs", "--memory", "1g", "--runtime-gate", "off")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["shm_mb"] == 1024, r.why()
    r = erun(engine, exp, tmp_path / "runs2", "--shm-size", "300m", "--memory", "1g",
             "--runtime-gate", "off")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["shm_mb"] == 300, r.why()
    assert left(engine) == []


def test_memory_limit_is_oom(engine, tmp_path):
    exp = write_exp(tmp_path, """
        print("accuracy: 0.5", flush=True)
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
    """)
    wd = tmp_path / "wd"
    wd.mkdir()
    r = erun(engine, exp, tmp_path / "runs", "--memory", "128m", "--policy", "permissive", cwd=wd)
    assert r.rc == 137, r.why()
    assert r.result["status"] == "oom" and r.result["oom_killed"] is True
    assert r.result["metrics"]["values"]["accuracy"] == 0.5
    assert r.result["isolation"]["memory_enforced_by"]
    assert left(engine) == []
    # Nothing of the engine's in the directory labbox was started from (podman's conmon
    # writes an empty "oom" into its working directory), nor among the run's records.
    assert list(wd.iterdir()) == []
    assert not (Path(r.result["run_dir"]) / "oom").exists()


def start_sleeping_labbox(engine, tmp_path, marker):
    exp = write_exp(tmp_path, f"""
        import time
        print({marker!r}, flush=True)
        time.sleep(600)
    """, name=marker)
    cmd = [os.environ.get("LABBOX_BIN", str(REPO / "build" / "labbox")), "run", "--mode",
           "docker", "--engine", engine.name, "--image", IMAGE, "--runs-dir",
           str(tmp_path / "runs"), str(exp)]
    p = subprocess.Popen(cmd, env=engine.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline().decode()
    assert marker in line
    return p


def children_in_own_session(pid):
    """labbox's children that called setsid: its guardian, which outlives it."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                f = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(f[1]) == pid and int(f[3]) == int(d.name):
                found.append(int(d.name))
    return found


def wait_until_no_container(engine, timeout=30):
    import time
    deadline = time.monotonic() + timeout
    while left(engine) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left(engine)


def test_killed_labbox_leaves_no_container(engine, tmp_path):
    # SIGKILL of labbox: its guardian removes the container.
    p = start_sleeping_labbox(engine, tmp_path, unique("dk"))
    p.kill()
    p.wait(timeout=30)
    assert wait_until_no_container(engine) == []
    # SIGKILL of labbox and its guardian (a machine going down): the container stays, and
    # the next run removes it, its labbox being dead.
    p = start_sleeping_labbox(engine, tmp_path, unique("dk"))
    guards = children_in_own_session(p.pid)
    assert len(guards) == 1, guards
    os.kill(guards[0], 9)
    p.kill()
    p.wait(timeout=30)
    stale = left(engine)
    assert len(stale) == 1, stale
    r = erun(engine, write_exp(tmp_path, "print('x: 1')\n", name="next"), tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert left(engine) == []


def test_missing_image_is_125(engine, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--engine", engine.name, "--image",
                "labbox-no-such:img",
                env=engine.env, python="python3")
    assert r.rc == 125, r.why()
    assert "labbox-no-such:img" in r.result["infra_error"]["message"]


def test_unreachable_engine_is_125(tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    sock = f"unix://{tmp_path}/nothing.sock"
    env = dict(os.environ, DOCKER_HOST=sock)
    r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--image", IMAGE, env=env,
                python="python3")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert sock in msg and "docker info" in msg
    assert r.result["backend"]["name"] == "docker"  # never run locally instead
    assert not (r.exp / "results.json").exists()


def test_labbox_yaml_mode_docker(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n",
                    yaml=f"mode: docker\nimage: {IMAGE}\n")
    r = labbox("run", "--json", "--runs-dir", tmp_path / "runs", exp, env=dockerd)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert doc["backend"]["name"] == "docker"
    assert doc["metrics"]["values"]["answer"] == 42


# --- images built by labbox from a generated Dockerfile (no --image) ---

def image_facts(env, ref):
    out = docker(env, "image", "inspect", "--format", "{{.Id}} {{.Created}}", ref)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def brun(env, expdir, runs, *opts, **kw):
    """--mode docker without --image: labbox builds FROM the test image."""
    return run_exp(expdir, runs, "--mode", "docker", "--base-image", IMAGE, *opts, env=env,
                   python="python3", **kw)


def test_built_image_runs_quickstart_and_is_reused(dockerd, tmp_path):
    r = brun(dockerd, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    be = r.result["backend"]
    assert be["image_origin"] in ("built", "reused")  # another test may have built it first
    tag = be["image"]
    assert tag.startswith("labbox-experiment:")
    assert be["build"]["base_image"] == IMAGE and be["build"]["requirements_txt"] is False
    assert be["build"]["base_image_id"] == image_facts(dockerd, IMAGE).split()[0]
    dockerfile = Path(be["build"]["dockerfile"])
    text = dockerfile.read_text()
    assert text.splitlines()[3] == f"FROM {IMAGE}" and "USER researcher" in text
    assert set(r.result["metrics"]["conditions"]) == {"lambda_0.01", "lambda_1", "lambda_100"}
    # the image the engine holds carries labbox's labels and a non-root user
    cfg = docker(dockerd, "image", "inspect", "--format",
                 "{{.Config.User}} {{index .Config.Labels \"labbox.recipe\"}}", tag)
    assert cfg.stdout.split() == ["researcher", be["build"]["recipe_sha256"]]
    before = image_facts(dockerd, tag)

    r2 = brun(dockerd, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r2.rc == 0, r2.why()
    be2 = r2.result["backend"]
    assert be2["image_origin"] == "reused" and be2["image"] == tag
    assert be2["build"]["log"] is None  # nothing built, so no log
    assert image_facts(dockerd, tag) == before  # the engine's own id and creation time
    assert be2["environment_from_cache"] is True
    assert (r2.run_dir / "environment.txt").read_text().startswith("Python 3.")
    assert r2.file_json("manifest.json")["config"]["base_image"] == IMAGE
    assert containers_left(dockerd) == []


def test_built_image_changes_with_requirements(dockerd, tmp_path):
    """The tag is the hash of what went in: a comment-only requirements.txt is a new recipe,
    and on a base without pip it is refused plainly, with the build log kept."""
    exp = write_exp(tmp_path, "print('x: 1')\n",
                    files={"requirements.txt": "nosuchpkg-labbox==1.0\n"})
    r = brun(dockerd, exp, tmp_path / "runs")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "has no pip" in msg and IMAGE in msg and "requirements.txt" in msg, msg
    log = r.run_dir / "docker-build.log"
    assert str(log) in msg and log.is_file()
    assert "has no pip" in log.read_text()
    assert (r.run_dir / "docker-build" / "requirements.txt").read_text() == "nosuchpkg-labbox==1.0\n"
    assert r.result["backend"]["build"]["requirements_txt"] is True
    assert not (r.exp / "results.json").exists()
    left = docker(dockerd, "ps", "-a", "-q")  # --force-rm: no intermediate container
    assert left.stdout.split() == []


def test_build_without_base_is_125(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--base-image",
                "labbox-no-such-base:1", env=dockerd, python="python3")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "labbox-no-such-base:1" in msg and "pull" in msg, msg


def test_image_and_base_image_together_is_usage_error(tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = labbox("run", "--json", "--mode", "docker", "--image", IMAGE, "--base-image", IMAGE,
               "--runs-dir", tmp_path / "runs", exp)
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    assert "--image" in doc["error"]["message"] and "--base-image" in doc["error"]["message"]
    bad = labbox("run", "--mode", "docker", "--base-image", "bad name", "--runs-dir",
                 tmp_path / "runs", exp)
    assert bad.returncode == 2 and "'bad name'" in bad.stderr
    local = labbox("run", "--base-image", IMAGE, "--runs-dir", tmp_path / "runs", exp)
    assert local.returncode == 2 and "mode docker only" in local.stderr


@pytest.mark.parametrize("where", ["yaml", "flag"])
def test_an_image_name_that_reads_as_an_option_never_reaches_the_engine(tmp_path, where):
    """labbox.yaml is the experiment's: `image: --privileged` (or `-v/:/host`) must not become
    an option of `docker run`, and no engine is asked anything about it."""
    exp = write_exp(tmp_path, "print('x: 1')\n")
    marker = tmp_path / "engine-called"
    fake = tmp_path / "bin"
    fake.mkdir()
    for engine in ("docker", "podman"):
        (fake / engine).write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (fake / engine).chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    # and a name podman reads as a transport to a file or store of the host's
    for name in ("--privileged", "-v/:/host", "docker-archive:/etc/shadow",
                 "oci:/root/img", "dir:/var/lib"):
        if where == "yaml":
            (exp / "labbox.yaml").write_text(f"mode: docker\nimage: '{name}'\n")
            args = []
        else:
            args = ["--mode", "docker", f"--image={name}"]
        r = labbox("run", "--json", *args, "--runs-dir", tmp_path / "runs", exp, env=env)
        assert r.returncode == 2, (r.returncode, r.stdout[-1000:], r.stderr[-1000:])
        assert name in json.loads(r.stdout)["error"]["message"]
        e = labbox("exec", "--mode", "docker", f"--image={name}", "--", "true", env=env)
        assert e.returncode == 2 and name in e.stderr, e.stderr
    assert not marker.exists()


def test_labbox_yaml_base_image(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n",
                    yaml=f"mode: docker\nbase_image: {IMAGE}\n")
    r = labbox("run", "--json", "--runs-dir", tmp_path / "runs", exp, env=dockerd)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert doc["backend"]["build"]["base_image"] == IMAGE
    assert doc["backend"]["image_origin"] in ("built", "reused")


# --- the OOM rule and podman ---

def test_exit_137_under_memory_limit_is_oom(engine, tmp_path):
    """A SIGKILL the engine does not flag as an OOM kill (as podman on cgroup v1 reports the
    OOM killer) counts as one under --memory, and says so; without --memory it is a signal."""
    exp = write_exp(tmp_path, """
        import os, signal
        print("accuracy: 0.5", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    r = erun(engine, exp, tmp_path / "runs", "--memory", "256m", "--policy", "permissive")
    assert r.rc == 137, r.why()
    assert r.result["status"] == "oom" and r.result["oom_killed"] is True
    assert "137" in r.result["backend"]["oom_reported_by"]
    plain = erun(engine, exp, tmp_path / "runs2", "--policy", "permissive")
    assert plain.rc == 1, plain.why()
    assert plain.result["oom_killed"] is False and plain.result["signal"] == 9
    assert plain.result["backend"]["oom_reported_by"] is None


def test_engine_oom_is_reported_by_the_engine(engine, tmp_path):
    """docker flags the OOM kill itself; podman on cgroup v1 does not (State.OOMKilled stays
    false, checked here by hand), so there the exit status 137 under --memory says it."""
    exp = write_exp(tmp_path, """
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
    """, yaml="metrics: none\n")
    r = erun(engine, exp, tmp_path / "runs", "--memory", "96m", "--policy", "permissive")
    assert r.rc == 137, r.why()
    assert r.result["status"] == "oom" and r.result["oom_killed"] is True
    by = r.result["backend"]["oom_reported_by"]
    cgroup_v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    if engine.name == "podman" and not cgroup_v2:
        assert by.startswith("exit status 137 under --memory"), by
        # what podman itself says of such a container
        c = engine.cli("run", "-d", "--memory", "96m", "--memory-swap", "96m",
                       "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                       "--network", "none", "--entrypoint", "python3", IMAGE, "-c",
                       "b = []\nwhile True: b.append(bytearray(16 << 20))", cwd=tmp_path)
        assert c.returncode == 0, c.stderr
        cid = c.stdout.strip()
        engine.cli("wait", cid)
        st = engine.cli("inspect", "--format", "{{.State.ExitCode}} {{.State.OOMKilled}}", cid)
        engine.cli("rm", "-f", cid)
        assert st.stdout.split() == ["137", "false"], st.stdout
    else:
        assert by.startswith("engine"), by
    assert left(engine) == []


def test_absent_podman_is_125_naming_it(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    # a directory the sandboxed check (uid 65534) can reach, unlike the 0700 tmp_path
    bin_dir = Path(tempfile.mkdtemp(prefix="labbox-nopodman-", dir="/var/tmp"))
    bin_dir.chmod(0o755)
    # only the local python3 the static check compiles with: no podman on this PATH
    (bin_dir / "python3").symlink_to("/usr/bin/python3")
    env = dict(dockerd, PATH=str(bin_dir))
    r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--engine", "podman", "--image",
                IMAGE, env=env, python="python3")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "podman" in msg and "not installed" in msg, msg
    assert r.result["backend"]["engine"] == "podman"  # never docker instead
    p = labbox("probe", "--mode", "docker", "--engine", "podman", "--json", env=env)
    assert p.returncode == 125
    assert "podman" in json.loads(p.stdout)["error"]["message"]
    shutil.rmtree(bin_dir, ignore_errors=True)


def test_podman_answers_when_docker_does_not(podman_env, tmp_path):
    """No --engine: the first engine that answers serves, podman where there is no docker;
    where DOCKER_HOST names a docker engine that does not answer, never podman instead."""
    exp = write_exp(tmp_path, "print('answer: 42')\n")
    bin_dir = Path(tempfile.mkdtemp(prefix="labbox-nodocker-", dir="/var/tmp"))
    bin_dir.chmod(0o755)
    for tool in ("podman", "python3"):  # podman finds conmon and runc by their own paths
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    env = dict(podman_env, PATH=str(bin_dir))
    env.pop("DOCKER_HOST", None)
    r = drun(env, exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["backend"]["engine"] == "podman"
    assert r.result["metrics"]["values"]["answer"] == 42
    p = labbox("probe", "--mode", "docker", "--json", env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["backend"]["engine"] == "podman"
    shutil.rmtree(bin_dir, ignore_errors=True)
    named = dict(podman_env, DOCKER_HOST=f"unix://{tmp_path}/nothing.sock")
    r = drun(named, exp, tmp_path / "runs2")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "nothing.sock" in msg and "no podman instead" in msg, msg
    assert r.result["backend"]["engine"] == "docker"


def test_probe_podman_matches_the_engine(podman_env):
    p = labbox("probe", "--mode", "docker", "--engine", "podman", "--json", env=podman_env)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["mode"] == "docker" and doc["works"]
    be = doc["backend"]
    info = json.loads(subprocess.run(["podman", "info", "--format", "{{json .}}"], env=podman_env,
                                     capture_output=True, text=True, timeout=60).stdout)
    host = info["host"]
    assert be["engine"] == "podman" and be["version"] == info["version"]["Version"]
    assert be["cgroup"]["version"] == host["cgroupVersion"]
    assert be["cgroup"]["driver"] == host["cgroupManager"] == "cgroupfs"
    assert be["rootless"] is host["security"]["rootless"] is False
    assert be["limits"]["memory"] == ("memory" in host["cgroupControllers"])
    assert be["limits"]["pids_limit"] == ("pids" in host["cgroupControllers"])
    assert be["seccomp"] == host["security"]["seccompEnabled"]
    assert be["default_runtime"] == host["ociRuntime"]["name"]
    assert be["host"] is None and "default" in be["host_named_by"]
    remote = labbox("probe", "--mode", "docker", "--engine", "podman", "--json",
                    env=dict(podman_env, CONTAINER_HOST="unix:///nonexistent/podman.sock"))
    assert remote.returncode == 125
    assert "CONTAINER_HOST=unix:///nonexistent/podman.sock" in json.loads(remote.stdout)["error"]["message"]


# --- labbox probe --mode docker ---

def test_probe_docker_matches_the_engine(dockerd):
    p = labbox("probe", "--mode", "docker", "--json", env=dockerd)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.probe/1" and doc["mode"] == "docker" and doc["works"]
    be = doc["backend"]
    info = json.loads(docker(dockerd, "info", "--format", "{{json .}}").stdout)
    assert be["engine"] == "docker" and be["version"] == info["ServerVersion"]
    assert be["host"] == dockerd["DOCKER_HOST"]
    assert be["cgroup"]["version"] == "v" + info["CgroupVersion"]
    assert be["limits"]["memory"] == info["MemoryLimit"]
    assert be["limits"]["pids_limit"] == info["PidsLimit"]
    assert be["limits"]["cpus"] == info["CpuCfsQuota"]
    assert be["rootless"] == any("rootless" in s for s in info["SecurityOptions"])
    assert be["security_options"] == info["SecurityOptions"]
    assert isinstance(be["limits"]["gpus"]["honoured"], bool) and be["limits"]["gpus"]["how"]
    text = labbox("probe", "--mode", "docker", env=dockerd)
    assert text.returncode == 0 and "--pids-limit" in text.stdout and "cgroups" in text.stdout


def test_probe_docker_unreachable_is_125(tmp_path):
    sock = f"unix://{tmp_path}/nothing.sock"
    env = dict(os.environ, DOCKER_HOST=sock)
    p = labbox("probe", "--mode", "docker", env=env)
    assert p.returncode == 125
    assert sock in p.stderr and "docker info" in p.stderr
    j = labbox("probe", "--mode", "docker", "--json", env=env)
    assert j.returncode == 125
    doc = json.loads(j.stdout)
    assert doc["schema"] == "labbox.error/1" and "docker info" in doc["error"]["message"]
    bad = labbox("probe", "--mode", "nowhere")
    assert bad.returncode == 2 and "nowhere" in bad.stderr
    eng = labbox("probe", "--engine", "docker")
    assert eng.returncode == 2 and "--mode docker" in eng.stderr


# --- labbox exec --mode docker ---

def dexec(env, *args, input=None):
    return labbox("exec", "--mode", "docker", "--image", IMAGE, *args, env=env, input=input)


def test_exec_in_docker(dockerd, tmp_path):
    r = dexec(dockerd, "--", "sh", "-c", "echo out; echo err >&2; id -u; exit 3")
    assert r.returncode == 3, r.stderr
    assert r.stdout.split() == ["out", "65534"] and "err" in r.stderr
    cat = dexec(dockerd, "--", "cat", input="hello\n")
    assert cat.returncode == 0 and cat.stdout == "hello\n"
    wd = tmp_path / "wd"
    wd.mkdir()
    wd.chmod(0o777)
    j = dexec(dockerd, "-w", wd, "--json", "--", "sh", "-c", "pwd; touch made; cat /etc/hostname >/dev/null")
    assert j.returncode == 0, j.stderr
    doc = json.loads(j.stdout)
    assert doc["schema"] == "labbox.exec/1" and doc["status"] == "exited"
    assert doc["backend"]["name"] == "docker" and doc["backend"]["image"] == IMAGE
    assert doc["isolation"]["network"] == "loopback" and doc["isolation"]["capabilities"] == "none"
    assert (wd / "made").exists() and str(wd) in j.stderr
    assert containers_left(dockerd) == []


def test_exec_in_docker_limits(dockerd):
    t = dexec(dockerd, "--budget", "2", "--grace", "1", "--", "sleep", "600")
    assert t.returncode == 124, t.stderr
    m = dexec(dockerd, "--memory", "64m", "--json", "--", "python3", "-c",
              "b=[]\nwhile True: b.append(bytearray(8 << 20))")
    assert m.returncode == 137, m.stderr
    assert json.loads(m.stdout)["status"] == "oom"
    n = dexec(dockerd, "--", "python3", "-c",
              "import socket\ntry:\n socket.create_connection(('1.1.1.1', 53), timeout=3); print('connected')\n"
              "except OSError: print('refused')")
    assert n.stdout.strip() == "refused"
    p = dexec(dockerd, "--pids-limit", "20", "--", "python3", "-c",
              "import os, time\nn = 0\ntry:\n for i in range(60):\n  if os.fork() == 0:\n"
              "   time.sleep(3); os._exit(0)\n  n += 1\nexcept OSError as e:\n"
              " print('stopped at', n, e.errno)")
    assert p.returncode == 0, p.stderr
    words = p.stdout.split()
    assert words[:2] == ["stopped", "at"] and int(words[2]) < 20 and words[3] == "11"  # EAGAIN
    missing = dexec(dockerd, "--", "no-such-command-labbox")
    assert missing.returncode == 127
    assert containers_left(dockerd) == []


def test_exec_docker_usage_errors():
    r = labbox("exec", "--mode", "docker", "--", "true")
    assert r.returncode == 2 and "--image" in r.stderr
    r = labbox("exec", "--mode", "ssh", "--", "true")
    assert r.returncode == 2 and "ssh" in r.stderr and "labbox run --mode" in r.stderr
    r = labbox("exec", "--image", IMAGE, "--", "true")
    assert r.returncode == 2 and "--mode docker" in r.stderr
    j = labbox("exec", "--mode", "docker", "--json", "--", "true")
    assert j.returncode == 2 and json.loads(j.stdout)["schema"] == "labbox.error/1"


def test_rerun_of_a_built_image_builds_from_the_same_base(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('answer: 42')\n")
    runs = tmp_path / "runs"
    r = brun(dockerd, exp, runs)
    assert r.rc == 0, r.why()
    man = r.file_json("manifest.json")["config"]
    assert man["image"] is None and man["base_image"] == IMAGE
    assert man["image_built"] == r.result["backend"]["image"]
    q = labbox("rerun", "--json", "--runs-dir", runs, r.result["id"], env=dockerd)
    assert q.returncode == 0, q.stderr
    doc = json.loads(q.stdout)
    assert doc["rerun"]["of"] == r.result["id"]
    assert doc["backend"]["image"] == r.result["backend"]["image"]
    assert doc["backend"]["image_origin"] == "reused"
    assert doc["metrics"]["values"]["answer"] == 42


def test_a_disk_limit_docker_cannot_hold_is_refused_unless_accepted(dockerd, tmp_path):
    """exp/ is a bind mount docker cannot size: a --disk-limit given is a poll there, refused
    (125) unless --allow-degraded disk accepts it; the record says which held the run."""
    exp = write_exp(tmp_path, 'print("accuracy: 1")\n')
    r = drun(dockerd, exp, tmp_path / "runs", "--disk-limit", "64m")
    assert r.rc == 125 and r.result["status"] == "infra_error", r.why()
    assert "--allow-degraded disk" in r.result["infra_error"]["message"], r.result["infra_error"]
    r = drun(dockerd, exp, tmp_path / "runs2", "--disk-limit", "64m", "--allow-degraded", "disk")
    assert r.rc == 0, r.why()
    assert r.result["isolation"]["disk_enforced_by"].startswith("polling (accepted"), r.result["isolation"]
    r = drun(dockerd, exp, tmp_path / "runs3")
    assert r.rc == 0, r.why()
    assert r.result["isolation"]["disk_enforced_by"].startswith("polling ("), r.result["isolation"]
    assert containers_left(dockerd) == []


# --- the runtime gate in the container ---

def test_runtime_gate_refuses_a_spawn_in_the_container(engine, tmp_path):
    """The gate's sitecustomize is mounted read-only into the container and first on
    PYTHONPATH, as the local sandbox binds it: a process the static check cannot see coming
    (pydoc's pager runs a shell) is refused as it happens, and result.json names the event."""
    exp = write_exp(tmp_path, """
        import pydoc
        print("accuracy: 0.5", flush=True)
        try:
            pydoc.pipepager("text", "touch MARKER")
        except PermissionError as e:
            print("refused:", e)
            raise
    """)
    r = erun(engine, exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on",
             "-e", "PYTHONPATH=/opt/user-lib")
    assert r.rc == 1, r.why()
    g = r.result["runtime_gate"]
    assert g["installed"] is True and g["enforced"] is True and g["note"] is None, g
    ev = [e for e in g["events"] if e["refused"]]
    assert ev and ev[0]["event"] == "subprocess.Popen" and ev[0]["rule"] == "LB102", g
    assert ev[0]["args"][1] == ["/bin/sh", "-c", "touch MARKER"], ev[0]
    assert r.result["failure"]["class"] == "gate_refused", r.why()
    assert not (r.exp / "MARKER").exists()  # the shell never ran
    assert "refused:" in r.log() and r.result["metrics"]["values"]["accuracy"] == 0.5
    # the user's PYTHONPATH joins sys.path once the gate is in; the gate off is no gate at all
    off = write_exp(tmp_path, "import os, sys\nprint('path:', os.environ.get('PYTHONPATH'))\n"
                    "print('user lib:', '/opt/user-lib' in sys.path)\n"
                    "print('gate:', os.path.exists('/run/labbox-gate/py/sitecustomize.py'))\n",
                    name="off")
    r = erun(engine, off, tmp_path / "runs2", "--policy", "permissive", "-e",
             "PYTHONPATH=/opt/user-lib")
    assert r.rc == 0, r.why()
    assert "path: /run/labbox-gate/py\n" in r.log() and "gate: True" in r.log(), r.log()
    assert "user lib: True" in r.log(), r.log()
    assert r.result["runtime_gate"]["mode"] == "record"
    assert r.result["runtime_gate"]["installed"] is True
    r = erun(engine, off, tmp_path / "runs3", "--runtime-gate", "off", "--policy", "permissive")
    assert r.rc == 0 and "path: None" in r.log() and "gate: False" in r.log(), r.why()
    assert r.result["runtime_gate"]["installed"] is False
    assert left(engine) == []


# --- the engine's API on its socket ---

def logging_client(tmp_path):
    """A `docker` first on PATH that logs each call's subcommand, then runs the real client."""
    real = shutil.which("docker")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "client-calls.log"
    (bindir / "docker").write_text(f'#!/bin/sh\necho "$1" >> {log}\nexec {real} "$@"\n')
    (bindir / "docker").chmod(0o755)
    return str(bindir), log


def test_api_run_records_what_the_client_run_does(dockerd, tmp_path):
    """On a unix socket labbox asks the engine itself (info, image inspect, inspect, rm):
    `docker` starts only for the run (and once per client binary for its version). Through a
    docker context (which only the client resolves) every question goes through the client.
    Both record the same backend block, and leave no container."""
    bindir, log = logging_client(tmp_path)
    sock = dockerd["DOCKER_HOST"]
    cfg = tmp_path / "docker-config"
    made = docker(dict(dockerd, DOCKER_CONFIG=str(cfg)), "context", "create", "lbtest",
                  "--docker", f"host={sock}")
    assert made.returncode == 0, made.stderr
    via_ctx = dict(dockerd, DOCKER_CONFIG=str(cfg), DOCKER_CONTEXT="lbtest",
                   PATH=f"{bindir}:{os.environ['PATH']}")
    via_ctx.pop("DOCKER_HOST")
    via_api = dict(dockerd, DOCKER_CONFIG=str(cfg), PATH=via_ctx["PATH"],
                   XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"))
    # a run that exits 3, so the container's end is read from the engine
    exp = write_exp(tmp_path, "print('x: 1')\nraise SystemExit(3)\n")
    blocks = {}
    for name, env in (("client", via_ctx), ("api", via_api)):
        log.write_text("")
        r = drun(env, exp, tmp_path / f"runs-{name}", "--policy", "permissive")
        assert r.rc == 1, r.why()
        assert r.result["exit_code"] == 3 and r.result["metrics"]["values"]["x"] == 1
        blocks[name] = r.result["backend"]
        calls = log.read_text().split()
        if name == "api":
            # the environment's snapshot only: the run itself is made over the API
            assert calls == ["--version", "run"], calls
        else:
            assert {"info", "image", "inspect", "rm"} <= set(calls), calls
        assert containers_left(dockerd) == []
    for key in ("name", "engine", "version", "client_version", "image", "image_id",
                "image_origin", "oom_reported_by", "interpreter", "isolated_by"):
        assert blocks["api"][key] == blocks["client"][key], key
    assert blocks["api"]["client_version"]
    assert set(blocks["api"]) == set(blocks["client"])
    assert blocks["api"]["host"] == sock
    # the same run again, the snapshot cached: no client at all
    log.write_text("")
    r = drun(via_api, exp, tmp_path / "runs-api2", "--policy", "permissive")
    assert r.rc == 1 and r.result["exit_code"] == 3, r.why()
    assert log.read_text().split() == []
    assert r.result["backend"]["command"][:2] == blocks["client"]["command"][:2]
    assert containers_left(dockerd) == []


def api_env(dockerd, tmp_path):
    """dockerd on its unix socket with a logging `docker` first on PATH, the image's
    environment snapshot cached by a first run: a run there starts no client."""
    bindir, log = logging_client(tmp_path)
    env = dict(dockerd, PATH=f"{bindir}:{os.environ['PATH']}",
               XDG_CACHE_HOME=str(tmp_path / "cache"), XDG_STATE_HOME=str(tmp_path / "state"))
    r = drun(env, write_exp(tmp_path, "print('x: 1')\n", name="warm"), tmp_path / "warm-runs")
    assert r.rc == 0, r.why()
    log.write_text("")
    return env, log


def test_api_run_output_budget_and_oom_without_a_client(dockerd, tmp_path):
    """Over the API: the whole output (both streams, in run.log, metrics from it), the exit
    status, a budget overrun stopped, an OOM kill flagged by the engine; no `docker` started
    for any of them, and no container left."""
    env, log = api_env(dockerd, tmp_path)
    exp = write_exp(tmp_path, """
        import sys, time
        print("accuracy: 0.75", flush=True)
        time.sleep(0.5)  # the engine reads the two streams apart: one at a time here
        sys.stderr.write("to stderr\\n")
        sys.stderr.flush()
        time.sleep(0.5)
        for i in range(20000):
            print(f"line {i:05d} " + "x" * 90)
        sys.exit(5)
    """, name="big")
    r = drun(env, exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 1 and r.result["exit_code"] == 5, r.why()
    text = r.log()
    # every line, whole and in order (2 MB: many frames of the engine's stream)
    assert [ln for ln in text.splitlines() if ln.startswith("line ")] == \
        [f"line {i:05d} " + "x" * 90 for i in range(20000)]
    assert text.startswith("accuracy: 0.75\nto stderr\nline 00000 "), text[:200]
    assert r.result["metrics"]["values"]["accuracy"] == 0.75

    slow = write_exp(tmp_path, """
        import time
        print("loss: 0.5", flush=True)
        time.sleep(600)
    """, name="slow")
    r = drun(env, slow, tmp_path / "runs2", "--budget", "3", "--grace", "1")
    assert r.rc == 124, r.why()
    assert r.result["timed_out"] is True and r.result["metrics"]["values"]["loss"] == 0.5
    assert r.result["resources"]["wall_s"] < 60

    hog = write_exp(tmp_path, """
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
    """, yaml="metrics: none\n", name="hog")
    r = drun(env, hog, tmp_path / "runs3", "--memory", "96m", "--policy", "permissive")
    assert r.rc == 137, r.why()
    assert r.result["oom_killed"] is True
    assert r.result["backend"]["oom_reported_by"].startswith("engine")
    assert log.read_text().split() == []
    assert containers_left(dockerd) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_api_run_streams_live_and_an_interrupt_removes_the_container(dockerd, tmp_path, sig):
    """The output reaches the terminal while the experiment runs; Ctrl-C (or SIGTERM) to
    labbox stops the container, records the run as interrupted and removes it, with no
    `docker` started."""
    env, log = api_env(dockerd, tmp_path)
    marker = unique("live")
    exp = write_exp(tmp_path, f"""
        import time
        print({marker!r}, flush=True)
        time.sleep(600)
    """, name="live")
    runs = tmp_path / "runs"
    cmd = [os.environ.get("LABBOX_BIN", str(REPO / "build" / "labbox")), "run", "--mode",
           "docker", "--image", IMAGE, "--python", "python3", "--grace", "1", "--runs-dir",
           str(runs), str(exp)]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = p.stdout.readline().decode()
        assert marker in line, line
        assert p.poll() is None  # streamed while the experiment still runs
        assert len(containers_left(dockerd)) == 1
        p.send_signal(sig)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc != 0
    (rd,) = [d for d in runs.iterdir() if d.is_dir()]
    res = json.loads((rd / "result.json").read_text())
    assert res["status"] == "interrupted", res
    assert containers_left(dockerd) == []
    assert log.read_text().split() == []


class FakeEngine:
    """A unix socket that answers every connection with the same bytes, then closes it."""

    def __init__(self, path, answer):
        import socket
        import threading
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.answer = answer
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                c.recv(4096)
                c.sendall(self.answer)

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("answer,said", [
    (b"220 smtp.example ESMTP ready\r\n", "not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n{\"ServerVersion\": \"2", "in the middle"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n<html></html", "not a JSON document"),
], ids=["garbage", "closed-mid-response", "not-json"])
def test_engine_socket_answering_garbage_is_125(tmp_path, answer, said):
    path = tmp_path / "engine.sock"
    fake = FakeEngine(path, answer)
    try:
        exp = write_exp(tmp_path, "print('x: 1')\n")
        env = dict(os.environ, DOCKER_HOST=f"unix://{path}")
        r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--image", IMAGE, env=env,
                    python="python3", timeout=60)
        assert r.rc == 125, r.why()
        msg = r.result["infra_error"]["message"]
        assert str(path) in msg and said in msg and "docker info" in msg, msg
        assert not (r.exp / "results.json").exists()
        p = labbox("probe", "--mode", "docker", env=env)
        assert p.returncode == 125 and said in p.stderr, p.stderr
    finally:
        fake.close()


def test_api_run_the_engine_refuses_is_125_in_its_words(dockerd, tmp_path):
    """A container the engine will not start (a file volume over /etc/mtab, the image's
    link into /proc, which the runtime will not mount): exit 125 with what the engine said, nothing left behind.
    (A volume inside /proc is refused by labbox itself now, before the engine: exit 2.)"""
    env, log = api_env(dockerd, tmp_path)
    exp = write_exp(tmp_path, "print('x: 1')\n", name="refused")
    f = tmp_path / "mounts.txt"
    f.write_text("x\n")
    r = drun(env, exp, tmp_path / "runs", "-v", f"{f}:/etc/mtab:ro")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "Error response from daemon" in msg and "/etc/mtab" in msg, msg
    assert log.read_text().split() == []
    assert containers_left(dockerd) == []


def test_a_container_the_engine_does_not_start_is_no_exit_of_the_code(engine, tmp_path):
    """Through either engine's client, a container that never started (a file volume
    over /etc/mtab, the image's link into /proc, which the runtime will not mount) is exit 125 with the engine's
    words, never the code's exit 128 or 127 (its State.ExitCode); nothing is left behind."""
    exp = write_exp(tmp_path, "print('x: 1')\n", name="never-started")
    f = tmp_path / "mounts.txt"
    f.write_text("x\n")
    r = erun(engine, exp, tmp_path / "runs", "-v", f"{f}:/etc/mtab:ro")
    assert r.rc == 125, r.why()
    msg = r.result["infra_error"]["message"]
    assert "/etc/mtab" in msg, msg
    assert r.result.get("exit_code") not in (127, 128), r.result.get("exit_code")
    assert "x" not in (r.result.get("metrics") or {}).get("values", {})
    assert left(engine) == []


def test_a_volume_does_not_show_labboxs_cache(dockerd, tmp_path):
    """labbox's cache holds the key that seals the user's records and what later runs load
    (the gate's compiled form, the probes). A volume that holds it (-v of a home) shows it
    covered in the container, as the local sandbox masks it; the rest of the volume is there."""
    cache = tmp_path / "cache"
    (cache / "labbox").mkdir(parents=True)
    key = cache / "labbox" / "record.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    (tmp_path / "data.txt").write_text("visible\n")
    os.chmod(tmp_path, 0o755)  # the container's user is not root's pytest
    os.chmod(cache, 0o755)
    exp = write_exp(tmp_path, """
        import os
        print("data:", open("/h/data.txt").read().strip())
        try:
            print("cache:", sorted(os.listdir("/h/cache/labbox")))
        except OSError as e:
            print("cache:", type(e).__name__)
        try:
            open("/h/cache/labbox/record.key", "rb").read()
            print("key: read")
        except OSError as e:
            print("key:", type(e).__name__)
        try:
            open("/h/state/labbox/record.key", "rb").read()
            print("state key: read")
        except OSError as e:
            print("state key:", type(e).__name__)
    """, name="cache-probe")
    # the key where an older labbox kept it: taken over into the state, hidden there too
    env = dict(dockerd, XDG_CACHE_HOME=str(cache), XDG_STATE_HOME=str(tmp_path / "state"))
    r = drun(env, exp, tmp_path / "runs", "-v", f"{tmp_path}:/h:ro")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "data: visible" in log and "key: read" not in log, log
    assert "cache: []" in log and "key: FileNotFoundError" in log, log
    assert "state key: read" not in log and "state key:" in log, log


def test_a_volume_does_not_show_hidden_paths(dockerd, tmp_path):
    """--hide PATH holds in a container as in the local sandbox: where a volume shows a
    hidden directory it is empty, a hidden file is empty, the rest of the volume is there."""
    secret = unique("secret")
    data = tmp_path / "data"
    (data / "private").mkdir(parents=True)
    (data / "private" / "key.txt").write_text(secret)
    (data / "token.txt").write_text(secret)
    (data / "public.txt").write_text("visible\n")
    for p in [tmp_path, data, data / "private"]:
        os.chmod(p, 0o755)  # the container's user is not root's pytest
    exp = write_exp(tmp_path, """
        import os
        print("public:", open("/h/public.txt").read().strip())
        print("private:", sorted(os.listdir("/h/private")))
        print("token:", repr(open("/h/token.txt").read()))
    """, name="hide-probe")
    r = drun(dockerd, exp, tmp_path / "runs", "-v", f"{data}:/h:ro", "--hide", data / "private",
             "--hide", data / "token.txt")
    assert r.rc == 0, r.why()
    log = r.log()
    assert secret not in log, log
    assert "public: visible" in log and "private: []" in log and "token: ''" in log, log


def test_a_volume_does_not_show_other_runs_records(dockerd, tmp_path):
    """`-v $PWD:/work` with the runs in $PWD/.labbox: another run's records (its -e values
    among them), the index and the sweeps stay out of the container's reach, as in the local
    sandbox. The records are given to the container's uid, as an ordinary user's own are to
    the container she runs."""
    secret = unique("secret")
    proj = tmp_path / "proj"
    runs = proj / ".labbox" / "runs"
    first = write_exp(proj, "print('x: 1')\n", name="first")
    r = drun(dockerd, first, runs, "-e", f"API_KEY={secret}")
    assert r.rc == 0, r.why()
    # tmp_path stays root's (open for the container's uid to pass): it holds the second run's
    # runs directory, and labbox refuses one below a directory another user owns
    os.chmod(tmp_path, 0o755)
    for q in [proj, *proj.rglob("*")]:
        os.chown(q, 65534, 65534)
        os.chmod(q, 0o755 if q.is_dir() else 0o644)
    snoop = write_exp(tmp_path, f"""
        import glob
        secret = {secret[:8]!r} + {secret[8:]!r}
        found = []
        for p in glob.glob("/work/**", recursive=True) + glob.glob("/work/.labbox/**", recursive=True):
            try:
                if secret in open(p, errors="replace").read():
                    found.append(p)
            except OSError:
                pass
        print("FOUND", found)
        print("seen", sorted(glob.glob("/work/.labbox/*")))
        print("x: 1")
    """, name="snoop")
    r = drun(dockerd, snoop, tmp_path / "runs2", "-v", f"{proj}:/work:ro")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "FOUND []" in log, log
    assert secret not in log, log
