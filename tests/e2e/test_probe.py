"""labbox probe: what this host offers, checked against the host itself."""
import json
import os
import platform
import subprocess

import pytest

from conftest import LABBOX


def probe(*args):
    return subprocess.run([LABBOX, "probe", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.xdist_group("host_gpu_nodes")  # not beside test_gpus.py's fake device nodes
def test_probe_json_matches_the_host():
    p = probe("--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.probe/1"
    assert doc["uid"] == os.getuid()
    assert doc["sandbox"] == {"works": True, "error": None}
    assert all(doc["namespaces"].values()), doc["namespaces"]
    assert doc["seccomp"]["usable"] is True and doc["seccomp"]["api_level"] >= 1
    # the runtime gate's exec guard: init can trace what it runs (as root and as a user)
    assert doc["exec_guard"] == {"usable": True, "note": None}, doc["exec_guard"]
    with open("/proc/sys/user/max_user_namespaces") as f:
        assert doc["user_namespaces"]["max_user_namespaces"] == int(f.read())
    deb = [i for i in doc["interpreters"] if i["name"] == "/usr/bin/python3"][0]
    host_version = subprocess.run(["/usr/bin/python3", "-c", "import platform; print(platform.python_version())"],
                                  capture_output=True, text=True).stdout.strip()
    assert deb["found"] and deb["version"] == host_version
    # cgroups: labbox claims a controller exactly when this user can create a cgroup there
    cg = doc["cgroups"]
    if cg["memory"]:
        test_dir = os.path.join(cg["where"], "labbox-probe-test-%d" % os.getpid())
        os.mkdir(test_dir)
        os.rmdir(test_dir)
    else:
        assert cg["where"] is None or not os.access(cg["where"], os.W_OK)
    gpus = [d for d in os.listdir("/dev") if d.startswith("nvidia") and d[6:].isdigit()]
    assert len(doc["gpus"]) == len(gpus)


def test_probe_table_and_usage_errors():
    p = probe()
    assert p.returncode == 0, p.stderr
    assert "sandbox            works" in p.stdout
    assert "seccomp            yes" in p.stdout
    assert "exec guard         yes (ptrace)" in p.stdout
    bad = probe("--bogus")
    assert bad.returncode == 2
    assert len(bad.stderr.strip().splitlines()) == 1 and "--bogus" in bad.stderr
