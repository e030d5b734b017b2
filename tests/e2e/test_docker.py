"""labbox run --mode docker against a real dockerd (tests/services/dockerd), checked from the
host's side: the same records as the local backend, host files unreadable, no network, the
budget, the memory limit, no container left behind, an unreachable engine refused.

The daemon is private to this session (its own data root and socket) and the image is
labbox-test:py3, built by debootstrap and `docker import` (no registry). Needs root; never
skipped silently: without root or dockerd the tests fail and say why."""
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, labbox, run_exp, unique, write_exp

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


def docker(env, *args):
    return subprocess.run(["docker", *args], env=env, capture_output=True, text=True, timeout=60)


def containers_left(env):
    out = docker(env, "ps", "-a", "-q", "--filter", "label=labbox.run")
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def drun(env, expdir, runs, *opts, **kw):
    return run_exp(expdir, runs, "--mode", "docker", "--image", IMAGE, *opts, env=env,
                   python="python3", **kw)


def test_quickstart_in_docker(dockerd, tmp_path):
    r = drun(dockerd, REPO / "examples" / "quickstart", tmp_path / "runs")
    assert r.rc == 0, r.why()
    res = r.file_json("result.json")
    assert res["status"] == "completed"
    assert res["backend"]["name"] == "docker" and res["backend"]["isolated_by"] == "docker"
    assert res["backend"]["engine"] == "docker" and res["backend"]["version"]
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
    assert containers_left(dockerd) == []


def test_host_files_and_network_out_of_reach(dockerd, tmp_path):
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
    r = drun(dockerd, exp, tmp_path / "runs", "--policy", "permissive")
    assert r.rc == 0, r.why()
    log = r.log()
    assert "TOP-SECRET" not in log and "no read:" in log
    assert "net: connected" not in log and "net: refused" in log
    assert r.result["isolation"]["network"] == "loopback"


def test_budget_ends_a_sleeping_run(dockerd, tmp_path):
    exp = write_exp(tmp_path, """
        import json, time
        with open("results.json", "w") as f:
            json.dump({"cond_a": {"loss": 0.25}}, f)
        print("condition: cond_a")
        print("loss: 0.25", flush=True)
        time.sleep(600)
    """)
    r = drun(dockerd, exp, tmp_path / "runs", "--budget", "3", "--grace", "1")
    assert r.rc == 124, r.why()
    assert r.result["status"] == "timeout" and r.result["timed_out"] is True
    assert r.result["partial"] is True, r.why()  # partial results kept
    assert r.result["metrics"]["conditions"]["cond_a"]["loss"] == 0.25
    assert r.result["metrics"]["files"]["results.json"] == {"cond_a": {"loss": 0.25}}
    assert containers_left(dockerd) == []


def test_memory_limit_is_oom(dockerd, tmp_path):
    exp = write_exp(tmp_path, """
        print("accuracy: 0.5", flush=True)
        blocks = []
        while True:
            blocks.append(bytearray(16 << 20))
    """)
    r = drun(dockerd, exp, tmp_path / "runs", "--memory", "128m", "--policy", "permissive")
    assert r.rc == 137, r.why()
    assert r.result["status"] == "oom" and r.result["oom_killed"] is True
    assert r.result["metrics"]["values"]["accuracy"] == 0.5
    assert r.result["isolation"]["memory_enforced_by"]
    assert containers_left(dockerd) == []


def test_killed_labbox_leaves_no_container(dockerd, tmp_path):
    marker = unique("dk")
    exp = write_exp(tmp_path, f"""
        import time
        print({marker!r}, flush=True)
        time.sleep(600)
    """)
    cmd = [os.environ.get("LABBOX_BIN", str(REPO / "build" / "labbox")), "run", "--mode",
           "docker", "--image", IMAGE, "--runs-dir", str(tmp_path / "runs"), str(exp)]
    p = subprocess.Popen(cmd, env=dockerd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline().decode()
    assert marker in line
    p.kill()
    p.wait(timeout=30)
    import time
    deadline = time.monotonic() + 30
    while containers_left(dockerd) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert containers_left(dockerd) == []


def test_missing_image_is_125(dockerd, tmp_path):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    r = run_exp(exp, tmp_path / "runs", "--mode", "docker", "--image", "labbox-no-such:img",
                env=dockerd, python="python3")
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
