"""--gpus: the device-node handling, with stand-in NVIDIA nodes (this machine has no GPU).

The stand-ins are real character devices with NVIDIA's major number (195), made by the test
in the host's /dev and removed afterwards; the sandbox must expose exactly the chosen ones."""
import json
import os
import subprocess

import pytest

from conftest import LABBOX

# The fake device nodes are made in the host's /dev: the tests that look for a GPU there
# (xdist_group "host_gpu_nodes") run on one worker, one after another.
pytestmark = [pytest.mark.skipif(os.getuid() != 0, reason="making device nodes needs root"),
              pytest.mark.xdist_group("host_gpu_nodes")]

NODES = {"nvidia0": 0, "nvidia1": 1, "nvidiactl": 255}


@pytest.fixture
def fake_gpus():
    if any(os.path.exists("/dev/" + n) for n in NODES):
        pytest.skip("this host has real NVIDIA device nodes")
    made = []
    try:
        for name, minor in NODES.items():
            os.mknod("/dev/" + name, 0o20666, os.makedev(195, minor))
            os.chmod("/dev/" + name, 0o666)
            made.append("/dev/" + name)
        yield
    finally:
        for path in made:
            os.unlink(path)


def inside(*opts):
    code = ("import json, os; print(json.dumps({'dev': sorted(n for n in os.listdir('/dev') "
            "if n.startswith('nvidia')), 'cuda': os.environ.get('CUDA_VISIBLE_DEVICES')}))")
    p = subprocess.run([LABBOX, "exec", "--json", *opts, "--", "/usr/bin/python3", "-c", code],
                       capture_output=True, text=True, timeout=60)
    return p


def test_a_cuda_error_where_there_are_gpus_names_gpus_all(fake_gpus, tmp_path):
    """On a machine with NVIDIA GPUs (here stand-ins), a run without --gpus that needs CUDA
    is told --gpus all, which lifts it (test_explain.py has the machine without any)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text('raise RuntimeError("No CUDA GPUs are available")\n')
    p = subprocess.run([LABBOX, "run", "--json", "--python", "/usr/bin/python3", "--runs-dir",
                        str(tmp_path / "runs"), str(exp)], capture_output=True, text=True,
                       timeout=120)
    f = json.loads(p.stdout)["failure"]
    assert f["class"] == "gpu_unavailable", f
    assert f["escalation"]["flag"] == "--gpus all" and f["escalation"]["grants"] == "gpu", f
    assert "--gpus all" in f["suggestion"] and "has no NVIDIA GPU" not in f["summary"], f


def test_no_gpu_visible_without_the_flag(fake_gpus):
    p = inside()
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stderr.strip().splitlines()[-1])
    assert seen == {"dev": [], "cuda": None}
    assert json.loads(p.stdout)["isolation"]["gpus"] is None


def test_chosen_gpus_and_control_nodes_only(fake_gpus):
    p = inside("--gpus", "1")
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stderr.strip().splitlines()[-1])
    assert seen["dev"] == ["nvidia1", "nvidiactl"]
    assert seen["cuda"] == "0"  # no UUIDs published here: the one GPU inside is CUDA's 0
    assert json.loads(p.stdout)["isolation"]["gpus"] == "1"
    p = inside("--gpus", "all")
    seen = json.loads(p.stderr.strip().splitlines()[-1])
    assert seen["dev"] == ["nvidia0", "nvidia1", "nvidiactl"] and seen["cuda"] == "0,1"


def test_missing_gpu_is_refused(fake_gpus):
    p = inside("--gpus", "5")
    assert p.returncode == 125
    assert "no GPU 5" in p.stderr and "0,1" in p.stderr
    p = inside("--gpus", "zero")
    assert p.returncode == 2 and "zero" in p.stderr


def test_gpus_on_a_host_without_any():
    if any(n.startswith("nvidia") and n[6:].isdigit() for n in os.listdir("/dev")):
        pytest.skip("this host has NVIDIA device nodes")
    p = inside("--gpus", "all")
    assert p.returncode == 125 and "no NVIDIA GPU" in p.stderr


FAKE_SMI = """#!/bin/sh
# Stand-in for nvidia-smi --query-compute-apps=pid,used_memory: the sandboxed process that
# carries the marker uses 1234 MiB (labbox's own command line carries it too, and is told
# by its arguments, whatever the binary is called); a host process (this script's parent
# shell's parent, i.e. labbox itself) uses 999 MiB and must not be counted.
# One grep over every cmdline: a loop starting two processes per pid took seconds on a loaded
# machine, longer than the run it was to sample.
for f in $(grep -l -a "{marker}" /proc/[0-9]*/cmdline 2>/dev/null); do
    d=${{f%/cmdline}}
    if ! tr '\\0' ' ' < "$f" 2>/dev/null | grep -q " exec --json --gpus "; then
        echo "${{d#/proc/}}, 1234"
    fi
done
echo "$PPID, 999"
"""


def test_peak_gpu_memory_from_nvidia_smi(fake_gpus, tmp_path):
    marker = "gpumem-%d" % os.getpid()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(FAKE_SMI.format(marker=marker))
    smi.chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ.get("PATH", "/usr/bin:/bin")))
    cmd = [LABBOX, "exec", "--json", "--gpus", "0", "--", "/usr/bin/python3", "-c",
           "import time; time.sleep(4)", marker]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["resources"]["peak_gpu_bytes"] == 1234 << 20
    # no nvidia-smi: not measured, and said so with null
    env["PATH"] = "/usr/bin:/bin"
    p = subprocess.run(cmd[:2] + ["--json", "--gpus", "0", "--", "/bin/true"], capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["resources"]["peak_gpu_bytes"] is None
