"""Hostile experiments under `labbox run`, checked from the host's side.

The experiment reports what it tried (for the failure message), but every assertion is about
the host: files that must not exist or change, a socket that must not be reached, processes
that must not survive.
"""
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import (HOSTILE, LABBOX, PYTHON, describe_pids, kill_marker, pids_with_marker, run_dirs,
                      run_exp, unique, wait_for, wait_no_marker, write_exp)


def tree_digest(root: Path):
    """{relpath: sha256} of every regular file under ROOT (symlinks recorded as their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "link:" + os.readlink(p)
            else:
                out[rel] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


WRITE_EVERYWHERE = r"""
import json, os
targets = json.load(open("targets.json"))
report = {}
for path in targets["files"]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError:
        pass
    try:
        with open(path, "w") as f:
            f.write("PWNED by the experiment\n")
        report[path] = "written"
    except OSError as e:
        report[path] = "refused: %s" % e
for path in targets["dirs"]:
    try:
        os.mkdir(path)
        report[path] = "mkdir ok"
    except OSError as e:
        report[path] = "refused: %s" % e
for path in targets["remove"]:
    try:
        os.unlink(path)
        report[path] = "removed"
    except OSError as e:
        report[path] = "refused: %s" % e
print(json.dumps(report, indent=1))
print("attempts: %d" % len(report))
"""


def test_writes_outside_exp_do_not_reach_host(tmp_path):
    tag = unique("escape")
    home = Path(os.path.expanduser("~"))
    runs = tmp_path / "runs"
    runs.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    host_files = [Path("/tmp") / tag, Path("/var/tmp") / tag, Path("/dev/shm") / tag,
                  home / tag, Path("/usr") / tag, Path("/etc") / tag, runs / tag,
                  tmp_path / tag]
    exp = write_exp(tmp_path, WRITE_EVERYWHERE, files={"targets.json": "{}"})
    src_before = None
    inside = [str(p) for p in host_files] + [
        "../result.json", "../run.log", "../manifest.json", "../pwned",
        str(exp / "main.py"),                    # the source directory of the experiment
        str(exp / tag),
        str(victim),
    ]
    targets = {
        "files": inside,
        "dirs": [str(home / (tag + "-d")), "../pwned-dir", str(runs / (tag + "-d"))],
        "remove": [str(victim), str(exp / "targets.json"), "targets.json"],
    }
    (exp / "targets.json").write_text(json.dumps(targets))
    n_attempts = len(set(targets["files"] + targets["dirs"] + targets["remove"]))
    src_before = tree_digest(exp)
    try:
        r = run_exp(exp, runs)
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"].get("attempts") == n_attempts, r.why()
        for p in host_files + [home / (tag + "-d"), runs / (tag + "-d")]:
            assert not p.exists(), f"the experiment created {p} on the host\n{r.log()}"
        assert victim.read_text() == "original\n"
        assert tree_digest(exp) == src_before, "the source experiment directory was modified"
        rd = r.run_dir
        assert not (rd / "pwned").exists() and not (rd / "pwned-dir").exists(), r.log()
        assert sorted(os.listdir(rd)) == sorted(
            ["exp", "run.log", "result.json", "manifest.json", "environment.txt"]), os.listdir(rd)
        res = json.loads((rd / "result.json").read_text())
        assert res["schema"] == "labbox.run/1" and res["id"] == r.result["id"]
        assert "PWNED" not in (rd / "manifest.json").read_text()
        assert "PWNED" not in (rd / "result.json").read_text()
        # the experiment's own working copy is writable (so the refusals above are not
        # just a read-only everything)
        assert not (r.exp / "targets.json").exists(), r.log()
    finally:
        for p in host_files + [home / (tag + "-d"), runs / (tag + "-d")]:
            if p.is_dir():
                p.rmdir()
            elif p.exists():
                p.unlink()


def test_symlinked_results_json_does_not_leak_host_secret(tmp_path):
    """A results.json that is a symlink to a root-only host file must not be read by labbox
    on the experiment's behalf and copied into result.json."""
    secret_word = unique("SECRET")
    secret = Path(os.path.expanduser("~")) / (unique("lbx-secret") + ".json")
    secret.write_text(json.dumps({"stolen": secret_word}))
    secret.chmod(0o600)
    exp = write_exp(tmp_path, f"""
        import os
        os.symlink({str(secret)!r}, "results.json")
        os.symlink({str(secret)!r}, "final_info.json")
        print("score: 1")
    """)
    try:
        r = run_exp(exp, tmp_path / "runs")
        everything = r.stdout + r.stderr
        for name in ("result.json", "manifest.json", "run.log"):
            p = r.run_dir / name
            if p.exists():
                everything += p.read_text(errors="replace")
        assert secret_word not in everything, "labbox followed the experiment's symlink to a host file"
    finally:
        secret.unlink()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom"])
def test_hostile_results_json_does_not_hang_labbox(tmp_path, kind):
    make = {
        "fifo": "os.mkfifo('results.json')",
        "dev-zero": "os.symlink('/dev/zero', 'results.json')",
        "dev-urandom": "os.symlink('/dev/urandom', 'final_info.json')",
    }[kind]
    exp = write_exp(tmp_path, f"import os\n{make}\nprint('score: 1')\n")
    r = run_exp(exp, tmp_path / "runs", timeout=60)  # a hang raises TimeoutExpired
    assert r.result["schema"] == "labbox.run/1"
    assert r.result["metrics"]["values"]["score"] == 1, r.why()
    assert r.rc in (0, 4), r.why()


class TcpCanary:
    """A listening socket on the host; records every connection it accepts."""

    def __init__(self, host="0.0.0.0"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        self._stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self._stop:
            try:
                conn, addr = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted.append(addr)
            try:
                conn.sendall(b"HELLO-FROM-HOST\n")
            except OSError:
                pass
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join(2)
        self.sock.close()


def host_addresses():
    addrs = {"127.0.0.1"}
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("192.0.2.1", 9))  # no packet is sent; picks the outgoing address
        addrs.add(s.getsockname()[0])
        s.close()
    except OSError:
        pass
    try:
        addrs.add(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    return sorted(addrs)


CONNECT_EXP = r"""
import json, socket
cfg = json.load(open("net.json"))
ok = 0
for host in cfg["hosts"]:
    s = None
    try:
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.settimeout(2)
        s.connect((host, cfg["port"]))
        print("CONNECTED to %s: %r" % (host, s.recv(100)))
        ok += 1
    except OSError as e:
        print("refused %s: %s" % (host, e))
    finally:
        if s is not None:
            s.close()
print("connected: %d" % ok)
"""


def test_network_none_by_default(tmp_path):
    canary = TcpCanary()
    try:
        hosts = host_addresses()
        exp = write_exp(tmp_path, CONNECT_EXP,
                        files={"net.json": json.dumps({"hosts": hosts, "port": canary.port})})
        r = run_exp(exp, tmp_path / "runs", *HOSTILE)
        time.sleep(0.5)
        assert canary.accepted == [], f"the experiment reached the host: {canary.accepted}\n{r.log()}"
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"]["connected"] == 0, r.log()
        # a sanity check of the canary itself, from the host
        with socket.create_connection(("127.0.0.1", canary.port), timeout=2) as s:
            assert s.recv(100).startswith(b"HELLO")
    finally:
        canary.close()


def test_network_host_is_explicit_opt_in(tmp_path):
    """The positive control of the test above: with --network host the same code connects."""
    canary = TcpCanary()
    try:
        exp = write_exp(tmp_path, CONNECT_EXP,
                        files={"net.json": json.dumps({"hosts": ["127.0.0.1"], "port": canary.port})})
        r = run_exp(exp, tmp_path / "runs", "--network", "host", *HOSTILE)
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"]["connected"] == 1, r.log()
        assert wait_for(lambda: canary.accepted, 2)
    finally:
        canary.close()


def test_host_environment_not_visible(tmp_path):
    canary_name = "LBX_CANARY_" + unique("v").replace("-", "_").upper()
    canary_value = unique("canaryvalue")
    exp = write_exp(tmp_path, """
        import json, os
        json.dump(dict(os.environ), open("env.json", "w"), indent=1)
        print("n_env: %d" % len(os.environ))
    """)
    env = {**os.environ, canary_name: canary_value, "AWS_SECRET_ACCESS_KEY": canary_value}
    r = run_exp(exp, tmp_path / "runs", "-e", "PASSED_ON=yes", env=env)
    assert r.rc == 0, r.why()
    inside = json.loads((r.exp / "env.json").read_text())
    assert inside.get("PASSED_ON") == "yes", inside  # -e works: the dump is real
    assert canary_name not in inside and "AWS_SECRET_ACCESS_KEY" not in inside, inside
    assert canary_value not in json.dumps(inside)
    assert canary_value not in r.log()


DAEMON_EXP = r"""
import os, sys, time
MARKER = "{marker}"
child_code = ("import sys, time\n"
              "open(sys.argv[1], 'a').write('alive\\n')\n"
              "time.sleep(600)\n")
# a plain child
import subprocess
subprocess.Popen([sys.executable, "-c", child_code, "child.alive", MARKER])
# a double-forked, setsid daemon, detached from everything
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        os.execv(sys.executable, [sys.executable, "-c", child_code, "daemon.alive", MARKER])
    os._exit(0)
os.waitpid(pid, 0)
for _ in range(200):
    if os.path.exists("daemon.alive") and os.path.exists("child.alive"):
        break
    time.sleep(0.05)
print("daemons: %d" % (os.path.exists("daemon.alive") + os.path.exists("child.alive")))
print("EXP-STARTED", flush=True)
{tail}
"""


def test_no_process_survives_a_run(tmp_path):
    marker = unique("lbxdaemon")
    exp = write_exp(tmp_path, DAEMON_EXP.format(marker=marker, tail=""))
    try:
        r = run_exp(exp, tmp_path / "runs", *HOSTILE, timeout=120)
        left = pids_with_marker(marker)
        assert not left, "processes of the run outlived labbox:\n" + describe_pids(left)
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"]["daemons"] == 2, r.log()  # they did start
    finally:
        kill_marker(marker)


def test_no_process_survives_budget_kill(tmp_path):
    marker = unique("lbxdaemon")
    exp = write_exp(tmp_path, DAEMON_EXP.format(marker=marker, tail="time.sleep(600)"))
    try:
        r = run_exp(exp, tmp_path / "runs", "--budget", 4, "--grace", 1, *HOSTILE, timeout=120)
        left = pids_with_marker(marker)
        assert not left, "processes outlived the budget kill:\n" + describe_pids(left)
        assert r.rc == 124, r.why()
        assert r.result["metrics"]["values"]["daemons"] == 2, r.log()
    finally:
        kill_marker(marker)


@pytest.mark.parametrize("mode", ["human", "json"])
def test_no_process_survives_sigkill_of_labbox(tmp_path, mode):
    marker = unique("lbxdaemon")
    exp = write_exp(tmp_path, DAEMON_EXP.format(marker=marker, tail="time.sleep(600)"))
    runs = tmp_path / "runs"
    cmd = [LABBOX, "run", "--python", PYTHON, "--runs-dir", str(runs), *HOSTILE, str(exp)]
    if mode == "json":
        cmd.insert(2, "--json")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def started():
            for d in run_dirs(runs):
                log = d / "run.log"
                if log.exists() and "EXP-STARTED" in log.read_text(errors="replace"):
                    return True
            return False
        assert wait_for(started, 60), "the experiment never reported EXP-STARTED in run.log"
        assert len(pids_with_marker(marker)) == 2, describe_pids(pids_with_marker(marker))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=10)
        left = wait_no_marker(marker, 10)
        assert not left, "processes survived SIGKILL of labbox for 10 s:\n" + describe_pids(left)
    finally:
        p.kill()
        p.wait()
        kill_marker(marker)


# --- hostile output -------------------------------------------------------------------------

def test_non_utf8_and_control_bytes_keep_result_json_valid(tmp_path):
    exp = write_exp(tmp_path, r"""
        import sys
        w = sys.stdout.buffer.write
        w(b"condition: caf\xe9\xff\n")
        w(b"loss\x1b[31m: 1.5\n")
        w(b"acc: 0.5\n")
        w(b"quote\"back\\slash: 2\n")
        w(b"\x00\x01\x02 binary garbage without newline")
        sys.stdout.flush()
        open("results.json", "wb").write(b'{"name\xff": "v\\u0000", "ok": 1}')
    """)
    # the experiment's own bytes go to stderr untouched; stdout (the document) must be UTF-8
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, "--runs-dir",
                        str(tmp_path / "runs"), str(exp)], capture_output=True, timeout=120)
    assert p.returncode in (0, 4), (p.returncode, p.stderr[-2000:])
    doc = json.loads(p.stdout.decode("utf-8"))  # strict UTF-8, valid JSON
    assert doc["schema"] == "labbox.run/1"
    on_disk = (Path(doc["run_dir"]) / "result.json").read_bytes()
    assert json.loads(on_disk.decode("utf-8")) == doc
    assert doc["metrics"]["values"].get("acc") == 0.5 or any(
        c.get("acc") == 0.5 for c in doc["metrics"]["conditions"].values()), doc["metrics"]


def test_deep_and_hostile_results_json(tmp_path):
    exp = write_exp(tmp_path, """
        import json
        doc = {"v": 0.5}
        for i in range(20):
            doc = {"level%d" % i: doc}
        json.dump(doc, open("results.json", "w"))
        open("final_info.json", "w").write("[" * 200000 + "]" * 200000)
        print("score: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", timeout=60)
    assert r.rc in (0, 4), r.why()
    doc = {"v": 0.5}
    for i in range(20):
        doc = {"level%d" % i: doc}
    assert r.result["metrics"]["files"]["results.json"] == doc, r.why()
    assert r.result["metrics"]["values"]["score"] == 1


def test_huge_output_line_and_many_metrics(tmp_path):
    exp = write_exp(tmp_path, """
        import sys
        sys.stdout.write("x" * (8 * 1024 * 1024) + "\\n")
        sys.stdout.write("long_" + "n" * 100000 + ": 1\\n")
        for i in range(20000):
            print("m%d: %d" % (i, i))
        print("final_metric: 42")
    """)
    r = run_exp(exp, tmp_path / "runs", *HOSTILE, timeout=120)
    assert r.rc in (0, 4), r.why()
    # a cap on how many metrics are kept is fine, dropping some silently is not
    kept = r.result["metrics"]["values"].get("final_metric") == 42
    reported = any(re.search(r"final_metric|limit|cap\b|too many|dropp|ignor",
                             json.dumps(x), re.I)
                   for x in r.result["metric_issues"] + r.result["findings"])
    assert kept or reported, ("final_metric was dropped without a metric_issue or finding; "
                              f"{len(r.result['metrics']['values'])} values kept")


def test_repeated_metric_keeps_last_value(tmp_path):
    exp = write_exp(tmp_path, """
        for i in range(50000):
            print("loss: %d" % i)
        print("final_metric: 42")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"loss": 49999, "final_metric": 42}, r.result["metrics"]
