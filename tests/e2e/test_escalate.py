"""`labbox run --escalate`: the user's standing permission to run a failed experiment once
more with exactly the escalation its failure calls for, and nothing without it.

The network case is real: the test listens on the host's loopback, which the sandbox's own
network namespace cannot reach and --network host can; the server counts who reached it.
"""
import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import HOSTILE, PYTHON, host_can_enforce, labbox, run_dirs, run_exp, write_exp

CONNECT = """
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
print("reply:", s.recv(64).decode().strip())
print("accuracy: 0.75")
"""


class HostServer:
    """A TCP server on the host's 127.0.0.1 that answers every connection and counts them."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.count = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            c.sendall(b"hello from the host\n")
            c.close()

    def close(self):
        self.sock.close()


@pytest.fixture
def server():
    s = HostServer()
    yield s
    s.close()


def test_network_escalation_reaches_the_host_and_rerun_repeats_it(tmp_path, server):
    exp = write_exp(tmp_path, CONNECT)
    runs = tmp_path / "runs"
    # Everything else is permitted too: only what the failure calls for is granted.
    r = run_exp(exp, runs, *HOSTILE, "--memory", "1g", "--allow-degraded", "memory",
                "--escalate", "memory,network,gpus", args=[server.port])
    assert r.rc == 0, r.why()
    res = r.result
    atts = res["attempts"]
    assert len(atts) == 2, r.why()
    first, second = atts
    assert first["status"] == "failed" and first["labbox_exit_code"] == 1
    assert first["flags"]["network"] == "none" and first["escalated"] == []
    assert second["flags"] == {"network": "host", "memory_bytes": 1 << 30, "gpus": None,
                               "env": None}
    assert second["escalated"] == ["network"]
    assert second["trigger"] == "escalation"
    assert "network" in second["why"] and "attempt 1" in second["why"]
    assert res["escalation"] == {"permitted": ["network", "gpus", "memory"],
                                 "granted": ["network"], "declined": []}
    assert res["id"] == second["id"] and res["metrics"]["values"]["accuracy"] == 0.75
    assert "hello from the host" in r.log()
    assert server.count == 1  # only the escalated attempt got through
    # Both attempts are runs of their own, each manifest with the flags it ran with.
    assert len(run_dirs(runs)) == 2
    m1 = json.loads((Path(first["run_dir"]) / "manifest.json").read_text())
    m2 = json.loads((r.run_dir / "manifest.json").read_text())
    assert m1["config"]["sandbox"]["network"] == "none"
    assert m2["config"]["sandbox"]["network"] == "host"
    # The verdict on disk is the document printed.
    assert json.loads((r.run_dir / "result.json").read_text())["attempts"] == atts
    # rerun of the result repeats the final attempt's flags.
    p = labbox("rerun", "--json", "--runs-dir", runs, res["id"])
    assert p.returncode == 0, p.stdout + p.stderr
    again = json.loads(p.stdout)
    m3 = json.loads((Path(again["run_dir"]) / "manifest.json").read_text())
    assert m3["config"]["sandbox"]["network"] == "host"
    assert server.count == 2


def test_nothing_is_escalated_without_the_flag(tmp_path, server):
    exp = write_exp(tmp_path, CONNECT)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, *HOSTILE, args=[server.port])
    assert r.rc == 1, r.why()
    assert "attempts" not in r.result and "escalation" not in r.result
    assert len(run_dirs(runs)) == 1 and server.count == 0


def test_escalate_grants_only_what_it_names(tmp_path, server):
    # A network failure with permission for memory and gpus only: not escalated.
    exp = write_exp(tmp_path, CONNECT)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, *HOSTILE, "--escalate", "memory,gpus", args=[server.port])
    assert r.rc == 1, r.why()
    assert [a["status"] for a in r.result["attempts"]] == ["failed"]
    assert r.result["escalation"]["permitted"] == ["gpus", "memory"]
    assert r.result["escalation"]["granted"] == []
    assert len(run_dirs(runs)) == 1 and server.count == 0
    # With --network host already there is nothing to grant: one attempt.
    r = run_exp(exp, runs, *HOSTILE, "--network", "host", "--escalate", "network", args=[1])
    assert r.rc == 1, r.why()
    assert len(r.result["attempts"]) == 1
    assert r.result["escalation"]["granted"] == []
    assert "already had the host network" in r.result["escalation"]["declined"][0]["reason"]


HOG = """
import random
random.seed(0)
block = bytearray(160 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
print("touched_mb:", len(block) >> 20)
"""


def test_memory_escalation_doubles_the_limit(tmp_path):
    exp = write_exp(tmp_path, HOG)
    runs = tmp_path / "runs"
    degraded = () if host_can_enforce("memory") else ("--allow-degraded", "memory")
    r = run_exp(exp, runs, "--memory", "120m", *degraded, "--escalate", "memory")
    assert r.rc == 0, r.why()
    first, second = r.result["attempts"]
    assert first["failure_class"] == "oom", r.why()
    assert first["flags"]["memory_bytes"] == 120 << 20
    assert second["flags"]["memory_bytes"] == 240 << 20
    assert second["escalated"] == ["memory"] and "twice the memory" in second["why"]
    assert r.result["metrics"]["values"]["touched_mb"] == 160
    m2 = json.loads((r.run_dir / "manifest.json").read_text())
    assert m2["config"]["sandbox"]["memory_bytes"] == 240 << 20


def test_memory_is_not_escalated_without_a_limit(tmp_path):
    exp = write_exp(tmp_path, "import random\nrandom.seed(0)\nraise MemoryError()\n")
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--escalate", "memory")
    assert r.rc == 1, r.why()
    assert r.result["failure"]["class"] == "oom"
    assert len(r.result["attempts"]) == 1 and len(run_dirs(runs)) == 1
    (d,) = r.result["escalation"]["declined"]
    assert d["escalation"] == "memory" and "no --memory" in d["reason"]


def test_an_allocation_no_memory_limit_could_give_is_not_escalated(tmp_path):
    """numpy refuses 7.28 TiB (an n x n matrix over 10**6 samples) under --memory 256m: the
    escalation used to rerun it with 512m. More than the machine has is the code's."""
    exp = write_exp(tmp_path, "import numpy as np\nn = 10**6\nd = np.zeros((n, n))\n")
    runs = tmp_path / "runs"
    degraded = () if host_can_enforce("memory") else ("--allow-degraded", "memory")
    r = run_exp(exp, runs, "--memory", "256m", *degraded, "--escalate", "memory")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "code_error" and f["escalation"] is None, r.why()
    assert "7.28 TiB" in f["summary"], r.why()
    assert len(r.result["attempts"]) == 1 and len(run_dirs(runs)) == 1, r.why()


CAUGHT_THEN_KILLED = """
import numpy as np
n = 10**6
try:
    d = np.empty((n, n))  # 7.28 TiB: numpy refuses it at once
except MemoryError as e:
    print(f"full matrix does not fit ({e}); computing in chunks", flush=True)
    chunk = np.ones(2**27)  # 1 GiB, touched: past the limit
    print("chunk:", float(chunk.sum()))
else:
    print("no refusal")
"""


@pytest.mark.skipif(not host_can_enforce("memory"), reason="no memory cgroup to kill at the limit")
def test_a_caught_allocation_does_not_size_the_memory_escalation(tmp_path):
    """The code caught numpy's "Unable to allocate 7.28 TiB" and went on in chunks, and a
    chunk was killed at --memory 256m: labbox asked for --memory 7456g (on a machine of a few
    dozen GB) and --escalate memory reran it with that. The kill's measure is twice the limit."""
    exp = write_exp(tmp_path, CAUGHT_THEN_KILLED)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--memory", "256m", "--budget", "60", "--escalate", "memory")
    if "no refusal" in r.log():
        pytest.skip("this host's overcommit let numpy map 7.28 TiB")
    first, second = r.result["attempts"]
    assert first["status"] == "oom" and first["flags"]["memory_bytes"] == 256 << 20, r.why()
    assert second["flags"]["memory_bytes"] == 512 << 20, r.why()
    assert "twice the memory" in second["why"], r.why()
    f = r.result["failure"]
    assert f["class"] == "oom", r.why()
    assert f["escalation"]["flag"] == "--memory 1g", r.why()
    assert "7456g" not in json.dumps(r.result), r.why()


def host_has_gpu():
    return any(Path("/dev").glob("nvidia[0-9]*"))


NO_GPU = """
import random
random.seed(0)
raise RuntimeError("No CUDA GPUs are available")
"""


@pytest.mark.xdist_group("host_gpu_nodes")  # not beside test_gpus.py's fake device nodes
@pytest.mark.skipif(host_has_gpu(), reason="this host has a GPU: the no-GPU path is not reachable")
def test_gpu_escalation_on_a_host_without_gpus_is_declined(tmp_path):
    exp = write_exp(tmp_path, NO_GPU)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--escalate", "gpus")
    assert r.rc == 1, r.why()
    assert r.result["failure"]["class"] == "gpu_unavailable", r.why()
    assert len(r.result["attempts"]) == 1 and len(run_dirs(runs)) == 1
    esc = r.result["escalation"]
    assert esc["permitted"] == ["gpus"] and esc["granted"] == []
    (d,) = esc["declined"]
    assert d["escalation"] == "gpus" and "no GPU" in d["reason"], d
    assert r.result["attempts"][0]["flags"]["gpus"] is None


NUMPY = """
import numpy as np
np.random.seed(0)
print("mean:", float(np.arange(5).mean()))
"""


def bare_venv(tmp_path):
    """A real virtual environment without numpy (no system site packages, no pip)."""
    venv = tmp_path / "bare-venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv / "bin" / "python"


def test_env_escalation_runs_in_the_environment_auto_finds(tmp_path):
    py = bare_venv(tmp_path)
    exp = write_exp(tmp_path, NUMPY)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--escalate", "env", python=py)
    assert r.rc == 0, r.why()
    first, second = r.result["attempts"]
    assert first["failure_class"] == "missing_package" and first["flags"]["env"] is None
    assert second["escalated"] == ["env"] and second["flags"]["env"] == "auto"
    assert "--env auto" in second["why"]
    chosen = r.result["environment"]["chosen"]
    assert chosen["python"] != str(py)
    assert r.result["metrics"]["values"]["mean"] == 2.0
    # rerun of the verdict runs in the environment that was chosen, and matches.
    p = labbox("rerun", "--json", "--runs-dir", runs, r.result["id"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["rerun"]["verdict"] == "match"


def test_env_escalation_when_no_environment_has_it_is_declined(tmp_path):
    exp = write_exp(tmp_path, "import random\nrandom.seed(0)\nimport lbx_no_such_module_anywhere\n")
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--escalate", "env")
    assert r.rc == 1, r.why()  # the first attempt's verdict stands
    assert r.result["failure"]["class"] == "missing_package"
    assert len(r.result["attempts"]) == 1 and len(run_dirs(runs)) == 1
    (d,) = r.result["escalation"]["declined"]
    assert d["escalation"] == "env" and "lbx_no_such_module_anywhere" in d["reason"], d
    assert r.result["escalation"]["granted"] == []


@pytest.mark.parametrize("value,words", [
    ("network,root", "'root' is not one of network, gpus, env, memory"),
    ("", "network, gpus, env, memory"),
])
def test_bad_escalations_are_refused(tmp_path, value, words):
    exp = write_exp(tmp_path, "print('x: 1')\n")
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, "--escalate", value)
    assert r.rc == 2
    assert r.result["schema"] == "labbox.error/1"
    assert words in json.dumps(r.result), r.result
    assert run_dirs(runs) == []


POOL_HOG = """
import time
from multiprocessing import Pool
def f(x):
    if x == 3:
        block = bytearray(300 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
    time.sleep(0.05)
    return x
if __name__ == "__main__":
    with Pool(2) as p:
        r = p.map(f, range(8))
    print("items:", len(r))
"""


def test_a_pool_worker_killed_for_memory_is_the_cause_of_the_timeout(tmp_path):
    """The OOM killer takes one pool worker; Pool.map then waits until the budget. The status
    stays timeout (the budget ended it), but the failure is oom, its advice memory, not a
    larger budget, and --escalate memory reruns it with twice the memory, which completes."""
    if not host_can_enforce("memory"):
        pytest.skip("host has no writable memory cgroup for --memory")
    exp = write_exp(tmp_path, POOL_HOG)
    r = run_exp(exp, tmp_path / "runs", "--memory", "256m", "--budget", "8", "--grace", "1",
                "--escalate", "memory")
    first = r.result["attempts"][0]
    assert first["status"] == "timeout" and first["failure_class"] == "oom", r.why()
    assert r.rc == 0 and r.result["metrics"]["values"]["items"] == 8, r.why()
    assert r.result["attempts"][1]["flags"]["memory_bytes"] == 512 << 20, r.why()
    # the first attempt's own record, and explain of it
    runs = tmp_path / "runs"
    doc = json.loads(labbox("explain", "--json", "--runs-dir", runs, first["id"]).stdout)
    f = doc["failure"]
    assert doc["status"] == "timeout" and doc["oom_killed"] is True, doc
    assert f["class"] == "oom" and "raise the budget" not in f["suggestion"], f
    assert "out-of-memory" in f["summary"] and f["escalation"]["grants"] == "memory", f


# A single-process torch.distributed run as DDP-ready research code starts it (pytorch/examples
# distributed/ddp with world_size=1): the TCPStore's socket is opened in native code.
GLOO = """
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29511")
dist.init_process_group("gloo", rank=0, world_size=1)
t = torch.ones(3); dist.all_reduce(t)
print("sum:", float(t.sum()))
dist.destroy_process_group()
"""


@pytest.mark.skipif(subprocess.run([PYTHON, "-c", "import torch.distributed"],
                                   capture_output=True).returncode != 0,
                    reason="torch.distributed is not installed")
def test_a_process_group_refused_its_socket_is_granted_a_loopback(tmp_path):
    exp = write_exp(tmp_path, GLOO)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs)
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    assert "local network socket" in f["summary"] and "--network none" in f["summary"], f
    assert "--network loopback" in f["suggestion"], f
    assert f["escalation"]["grants"] == "network" and f["escalation"]["flag"] == "--network loopback"
    # never a writable mount over torch's own package
    assert ":rw" not in json.dumps(f), f
    # --escalate network reruns it with a private loopback, which is all it needs
    r = run_exp(exp, runs, "--escalate", "network")
    assert r.rc == 0, r.why()
    first, second = r.result["attempts"]
    assert first["status"] == "failed" and second["status"] == "completed"
    assert second["flags"]["network"] == "loopback" and second["escalated"] == ["network"]
    assert "loopback" in second["why"], second
    assert r.result["escalation"]["granted"] == ["network"]
    assert r.result["metrics"]["values"]["sum"] == 3.0


SPAWN = """
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def main(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "29517"
    dist.init_process_group(backend="gloo", rank=rank, world_size=world_size)
    t = torch.ones(3)
    dist.all_reduce(t)
    if rank == 0:
        print(f"sum: {float(t.sum())}")
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(2,), nprocs=2)
"""


@pytest.mark.skipif(subprocess.run([PYTHON, "-c", "import torch.distributed"],
                                   capture_output=True).returncode != 0,
                    reason="torch.distributed is not installed")
def test_spawned_workers_refused_their_socket_are_granted_a_loopback(tmp_path):
    """DDP as it is usually started: torch.multiprocessing.spawn, each child calling
    init_process_group. The children's refused socket comes back as the parent's
    ProcessRaisedException, whose message is the child's traceback: the child's error is
    the cause, and --network loopback lifts it."""
    exp = write_exp(tmp_path, SPAWN)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs)
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    assert "local network socket" in f["summary"], f
    assert f["escalation"]["grants"] == "network" and f["escalation"]["flag"] == "--network loopback", f
    assert f["code_location"]["file"] == "main.py" and f["code_location"]["function"] == "main", f
    assert not any("\ufffd" in e for e in f["evidence"]), f["evidence"]
    r = run_exp(exp, runs, "--escalate", "network")
    assert r.rc == 0, r.why()
    first, second = r.result["attempts"]
    assert first["status"] == "failed" and second["status"] == "completed"
    assert second["flags"]["network"] == "loopback" and second["escalated"] == ["network"]
    assert r.result["metrics"]["values"]["sum"] == 6.0


# The program writes the words of a failed download and exits 1; it never opens a socket.
# The class is read from its output, but the host network is not bought with words: the
# runtime gate, which records every socket, recorded none.
PRINTED_URLERROR = r"""
import sys
sys.stderr.write('Traceback (most recent call last):\n'
                 '  File "main.py", line 2, in <module>\n'
                 '    urllib.request.urlopen("https://pypi.org/simple")\n'
                 'urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name '
                 'resolution>\n')
sys.exit(1)
"""


def test_a_printed_network_error_is_not_escalated_without_a_socket_seen(tmp_path):
    exp = write_exp(tmp_path, PRINTED_URLERROR)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, *HOSTILE, "--escalate", "network")
    assert r.rc == 1, r.why()
    assert r.result["runtime_gate"]["installed"] is True, r.why()
    assert [a["status"] for a in r.result["attempts"]] == ["failed"], r.why()
    assert r.result["escalation"]["granted"] == [], r.why()
    declined = r.result["escalation"]["declined"]
    assert declined and "saw no network attempt" in declined[0]["reason"], r.why()
    assert len(run_dirs(runs)) == 1
    f = r.result["failure"]
    assert f["class"] == "network" and f["confidence"] == "low", r.why()


# Words naming a credential of the host's: the advice never asks to copy it in or to make it
# writable, and a traceback the interpreter did not end the program with is not "high".
PRINTED_SECRETS = {
    "read": (r"""
import sys
sys.stderr.write('Traceback (most recent call last):\n'
                 '  File "main.py", line 2, in <module>\n'
                 '    key = open("/root/.ssh/id_rsa").read()\n'
                 "FileNotFoundError: [Errno 2] No such file or directory: '/root/.ssh/id_rsa'\n")
sys.exit(1)
""", "missing_data"),
    "write": (r"""
import sys
sys.stderr.write('Traceback (most recent call last):\n'
                 '  File "main.py", line 2, in <module>\n'
                 '    open("/root/.ssh/authorized_keys", "a")\n'
                 "OSError: [Errno 30] Read-only file system: '/root/.ssh/authorized_keys'\n")
sys.exit(1)
""", "sandbox_restriction"),
}


@pytest.mark.parametrize("case", sorted(PRINTED_SECRETS))
def test_advice_never_brings_a_credential_in(tmp_path, case):
    code, cls = PRINTED_SECRETS[case]
    exp = write_exp(tmp_path, code)
    r = run_exp(exp, tmp_path / "runs", *HOSTILE)
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == cls, r.why()
    assert f["confidence"] == "medium", r.why()
    assert "printed itself" in f["confidence_reason"], r.why()
    assert "-v SRC:/root/.ssh" not in json.dumps(f), r.why()
    if case == "read":
        assert "put '/root/.ssh/id_rsa' inside" not in f["suggestion"], r.why()
        assert "do not copy or mount it" in f["suggestion"], r.why()
    else:
        assert f["escalation"] is None, r.why()


def test_a_host_name_looked_up_is_a_network_attempt_seen(tmp_path):
    # A download's first step is the lookup, which fails in the sandbox's resolver before any
    # socket of Python's: the gate records it (not refused), and the escalation is made.
    exp = write_exp(tmp_path, """
        import urllib.request
        urllib.request.urlopen("https://example.org/data.csv", timeout=5)
    """)
    runs = tmp_path / "runs"
    r = run_exp(exp, runs, *HOSTILE, "--escalate", "network")
    first = json.loads((Path(r.result["attempts"][0]["run_dir"]) / "result.json").read_text())
    lookups = [e for e in first["runtime_gate"]["events"] if e["event"] == "socket.getaddrinfo"]
    assert lookups and lookups[0]["refused"] is False, first["runtime_gate"]
    assert lookups[0]["args"] == ["example.org"], lookups
    assert first["failure"]["class"] == "network", first["failure"]
    assert len(r.result["attempts"]) == 2, r.why()
    assert r.result["escalation"]["granted"] == ["network"], r.why()
