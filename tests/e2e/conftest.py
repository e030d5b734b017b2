"""Shared helpers for labbox's end-to-end tests.

Every test drives the real binary (LABBOX_BIN, default build/labbox of this checkout) with
real Python experiments written into pytest's tmp_path, and checks what a user would check:
exit codes, the run directory, result.json, and the host's own view of files, sockets and
processes. Nothing is mocked.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LABBOX = os.environ.get("LABBOX_BIN", str(REPO / "build" / "labbox"))
PYTHON = "/usr/bin/python3"
# Upper bound for any single labbox invocation, so that a hang fails a test instead of the
# whole session. Generous: it is a safety net, not a performance assertion.
CALL_TIMEOUT = 180


@pytest.fixture(scope="session", autouse=True)
def _labbox_binary():
    if not os.access(LABBOX, os.X_OK):
        pytest.fail(f"labbox binary not found or not executable: {LABBOX} "
                    f"(build it with `make`, or set LABBOX_BIN)", pytrace=False)


def user_dirs(cache, env=None):
    """The environment (os.environ's, or env) with labbox's cache at cache and its state (the
    records' key, the known runs directories) beside it at cache + "-state": a test that wants
    a user of its own needs both, or it shares a key with every other test."""
    out = dict(os.environ if env is None else env)
    out["XDG_CACHE_HOME"] = str(cache)
    out["XDG_STATE_HOME"] = str(cache) + "-state"
    return out


def unique(prefix="lbx"):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def labbox(*args, cwd=None, env=None, timeout=CALL_TIMEOUT, input=None, **kw):
    """Run labbox with ARGS; return the CompletedProcess (text mode)."""
    return subprocess.run([LABBOX, *map(str, args)], cwd=cwd, env=env, timeout=timeout,
                          input=input, capture_output=True, text=True, **kw)


def write_exp(root: Path, main_py: str, yaml: str = None, files: dict = None,
              name: str = "exp") -> Path:
    """Create an experiment directory with main.py (dedented), optional labbox.yaml, extra files."""
    d = Path(root) / name
    d.mkdir(parents=True, exist_ok=True)
    if main_py is not None:
        (d / "main.py").write_text(textwrap.dedent(main_py).lstrip("\n"))
    if yaml is not None:
        (d / "labbox.yaml").write_text(textwrap.dedent(yaml).lstrip("\n"))
    for rel, content in (files or {}).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return d


class Run:
    """The outcome of one `labbox run --json`: process, parsed result, run directory."""

    def __init__(self, proc, runs_dir: Path, elapsed: float):
        self.proc = proc
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.elapsed = elapsed
        self.runs_dir = runs_dir
        try:
            self.result = json.loads(proc.stdout)
        except ValueError as e:
            raise AssertionError(
                f"`labbox run --json` stdout is not one JSON document ({e}); rc={proc.returncode}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}") from None
        rd = self.result.get("run_dir")
        self.run_dir = Path(rd) if rd else None

    @property
    def exp(self) -> Path:
        return self.run_dir / "exp"

    def file_json(self, name):
        return json.loads((self.run_dir / name).read_text())

    def log(self):
        return (self.run_dir / "run.log").read_text(errors="replace")

    def why(self):
        """Context for an assertion message."""
        log = ""
        if self.run_dir and (self.run_dir / "run.log").exists():
            log = self.log()[-2000:]
        return (f"rc={self.rc}\nresult={json.dumps(self.result, indent=1)[:4000]}\n"
                f"stderr:\n{self.stderr[-2000:]}\nrun.log:\n{log}")


# Experiments that attack the sandbox itself (fork daemons, open sockets, kill themselves) would
# be stopped earlier by the static check; these flags let them reach the sandbox under test.
HOSTILE = ("--policy", "permissive")


def run_exp(expdir, runs_dir, *opts, args=(), env=None, cwd=None, timeout=CALL_TIMEOUT,
            python=PYTHON) -> Run:
    """`labbox run --json --python /usr/bin/python3 --runs-dir RUNS [opts] EXPDIR [-- args]`."""
    cmd = ["run", "--json", "--python", python, "--runs-dir", str(runs_dir), *map(str, opts),
           str(expdir)]
    if args:
        cmd += ["--", *map(str, args)]
    t0 = time.monotonic()
    proc = labbox(*cmd, env=env, cwd=cwd, timeout=timeout)
    return Run(proc, Path(runs_dir), time.monotonic() - t0)


def run_dirs(runs_dir: Path):
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.iterdir() if p.is_dir())


# --- processes, seen from the host ------------------------------------------------------------

def pids_with_marker(marker: str):
    """Host pids whose command line contains MARKER (zombies have an empty cmdline)."""
    me = os.getpid()
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def wait_no_marker(marker: str, timeout: float):
    """Poll until no process carries MARKER; return the pids still alive at the end."""
    deadline = time.monotonic() + timeout
    while True:
        left = pids_with_marker(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def describe_pids(pids):
    out = []
    for p in pids:
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            st = Path(f"/proc/{p}/status").read_text().splitlines()[:3]
            out.append(f"{p}: {cmd} {st}")
        except OSError:
            out.append(f"{p}: (gone)")
    return "\n".join(out)


def kill_marker(marker: str):
    """Clean-up after a failing test: kill what the test itself caused to be started."""
    for p in pids_with_marker(marker):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def wait_for(pred, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


def host_can_enforce(controller: str) -> bool:
    """Whether this host offers a writable cgroup CONTROLLER (memory, pids, cpu) to us, so
    that a labbox refusing the matching limit is a gap in labbox and not in the host."""
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.exists():
        try:
            return controller in v2.read_text().split() and os.access("/sys/fs/cgroup", os.W_OK)
        except OSError:
            return False
    v1 = Path("/sys/fs/cgroup") / controller
    return v1.is_dir() and os.access(v1, os.W_OK)


# ---- a real one-node Slurm cluster (tests/services/slurm), shared by test_slurm.py and
# test_sweep_slurm.py: one cluster for the session, started by the first test that needs it.

SLURM_SERVICE = REPO / "tests" / "services" / "slurm"


@pytest.fixture(scope="session")
def slurm():
    if os.geteuid() != 0:
        pytest.fail("the Slurm tests need root to start munged, slurmctld and slurmd "
                    "(make check runs as root)", pytrace=False)
    state = Path(tempfile.mkdtemp(prefix="labbox-slurm-", dir="/var/tmp"))
    out = subprocess.run([str(SLURM_SERVICE), "start", str(state)], capture_output=True,
                         text=True, timeout=120)
    if out.returncode != 0:
        # Once more from a clean state: a start has failed without a word (exit status only)
        # while other work loaded the machine; a second failure is the test session's.
        first = out
        subprocess.run([str(SLURM_SERVICE), "stop", str(state)], timeout=60)
        shutil.rmtree(state, ignore_errors=True)
        state.mkdir()
        out = subprocess.run([str(SLURM_SERVICE), "start", str(state)], capture_output=True,
                             text=True, timeout=120)
        if out.returncode != 0:
            subprocess.run([str(SLURM_SERVICE), "stop", str(state)], timeout=60)
            pytest.fail(f"tests/services/slurm start failed twice (exit {first.returncode}, "
                        f"then {out.returncode}):\n{first.stdout}\n{first.stderr}\n"
                        f"{out.stdout}\n{out.stderr}", pytrace=False)
    conf = out.stdout.strip().splitlines()[-1].split("=", 1)[1]
    env = dict(os.environ, SLURM_CONF=conf)
    yield env
    subprocess.run([str(SLURM_SERVICE), "stop", str(state)], timeout=60)
    shutil.rmtree(state, ignore_errors=True)


def squeue(env, *args):
    out = subprocess.run(["squeue", "-h", *args], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class PtyCapture:
    """A pseudo-terminal to give a command as its stderr, so labbox draws what it draws on a
    terminal; .text() is what it wrote so far. Use as a context manager."""

    def __init__(self):
        import pty
        import threading
        self.master, self.slave = pty.openpty()
        self.chunks = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while True:
            try:
                b = os.read(self.master, 4096)
            except OSError:
                return
            if not b:
                return
            self.chunks.append(b)

    def text(self):
        return b"".join(self.chunks).decode(errors="replace")

    def close(self):
        if self.slave is not None:
            os.close(self.slave)
            self.slave = None
            self.thread.join(10)
            os.close(self.master)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# An experiment whose process creation the static check lets through under permissive and
# the runtime gate refuses when it is on: for the backends that pass the gate's mode on.
GATE_SPAWN = """
import os
try:
    os.system("true")
    print("spawned: yes")
except PermissionError as e:
    print("refused:", e)
print("ok: 1")
"""
