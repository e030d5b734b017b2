"""Shared machinery of the hostile-experiment corpus (tests/escape).

Every attack is a Python script in corpus/ that the test stages as main.py of a fresh
experiment directory, next to attack.py (corpus/_attack.py: how an attack records what it
tried) and params.json (what the host prepared for it: ports, paths, pids, tags). labbox runs
it; the test then checks two things:

  * containment, from the host's side: canary servers that must not be reached, files that must
    not change, processes that must survive or must not survive, memory and disk that must
    stay bounded;
  * the verdict: the status, exit code and failure class in result.json name what happened.

The experiment's own report (exp/report.json) only explains a failure; no assertion about
containment trusts it. Nothing is mocked: the real binary (LABBOX_BIN, as in tests/e2e) with
real processes, sockets and files.

The generic helpers of tests/e2e/conftest.py (write_exp, run_exp, Run, process scans) are
reused; it is imported by its path under another module name, so the two suites never fight
over the module name `conftest`.
"""
import ctypes
import importlib.util
import json
import os
import platform
import pwd
import select
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
import uuid
from pathlib import Path


HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"

_spec = importlib.util.spec_from_file_location("labbox_e2e_helpers",
                                               HERE.parent / "e2e" / "conftest.py")
e2e = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(e2e)

LABBOX = e2e.LABBOX
LABBOX_REAL = os.path.realpath(LABBOX)
PYTHON = e2e.PYTHON
CALL_TIMEOUT = e2e.CALL_TIMEOUT
Run = e2e.Run
user_dirs = e2e.user_dirs
# The static check (`labbox check`, run before every `labbox run`) rejects most of this corpus
# outright. It is a filter, not a boundary: code can always be written so that it passes. The
# corpus tests the sandbox itself, so every run reports findings without enforcing them.
POLICY = ("--policy", "permissive")


def run_exp(expdir, runs_dir, *opts, **kw):
    """tests/e2e's run_exp (`labbox run --json ...`), with the static check reporting only."""
    return e2e.run_exp(expdir, runs_dir, *POLICY, *opts, **kw)


run_dirs = e2e.run_dirs
wait_for = e2e.wait_for
pids_with_marker = e2e.pids_with_marker
describe_pids = e2e.describe_pids
kill_marker = e2e.kill_marker
host_can_enforce = e2e.host_can_enforce

IS_ROOT = os.geteuid() == 0
# The identity the experiment runs with: nobody when labbox runs as root, else the caller.
PAYLOAD_UID = 65534 if IS_ROOT else os.getuid()
PAYLOAD_GID = 65534 if IS_ROOT else os.getgid()
X86_64 = platform.machine() == "x86_64"
HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
MiB = 1 << 20
GiB = 1 << 30


def unique(prefix="lbx"):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def token():
    """A secret-looking word that the experiment must never get to print."""
    return "LBXSECRET" + uuid.uuid4().hex.upper()


# --- staging ------------------------------------------------------------------------------------

def stage(tmp_path, attack, params=None, files=None, name="exp"):
    """An experiment directory: corpus/ATTACK.py as main.py, attack.py, params.json."""
    src = CORPUS / f"{attack}.py"
    assert src.is_file(), src
    d = Path(tmp_path) / name
    d.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, d / "main.py")
    shutil.copyfile(CORPUS / "_attack.py", d / "attack.py")
    (d / "params.json").write_text(json.dumps(params or {}, indent=1))
    for rel, content in (files or {}).items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    return d


def report(r):
    """exp/report.json of a finished run (what the attack says it did), or {}."""
    try:
        return json.loads((r.exp / "report.json").read_text())
    except (OSError, ValueError, TypeError):
        return {}


_control_root = None


def _control_dir():
    """Where positive controls run: a directory the experiment's identity can reach (pytest's
    basetemp is private to its owner), removed when the session ends."""
    global _control_root
    if _control_root is None:
        import atexit
        import tempfile
        _control_root = tempfile.mkdtemp(prefix="labbox-escape-controls-", dir="/tmp")
        os.chmod(_control_root, 0o755)
        atexit.register(shutil.rmtree, _control_root, True)
    return Path(_control_root)


def run_unsandboxed(exp, tmp_path, env=None, timeout=60, as_payload=True):
    """Positive control: the same attack run directly by the host's Python, as the identity the
    experiment would have inside (nobody when root), in a copy of EXP. Returns (proc, report);
    proc.work is the copy."""
    work = _control_dir() / ("control-" + uuid.uuid4().hex[:8])
    shutil.copytree(exp, work, symlinks=True)
    preexec = None
    if as_payload and IS_ROOT:
        for dirpath, dirnames, filenames in os.walk(work):
            for n in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
                os.lchown(n, PAYLOAD_UID, PAYLOAD_GID)

        def preexec():
            os.setgroups([])
            os.setgid(PAYLOAD_GID)
            os.setuid(PAYLOAD_UID)
    e = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(work)}
    e.update(env or {})
    p = subprocess.run([PYTHON, "main.py"], cwd=work, env=e, capture_output=True, text=True,
                       timeout=timeout, preexec_fn=preexec, stdin=subprocess.DEVNULL)
    try:
        rep = json.loads((work / "report.json").read_text())
    except (OSError, ValueError):
        rep = {}
    p.work = work
    return p, rep


# --- limits -------------------------------------------------------------------------------------

def limit_opts(controller, flag, value):
    """[flag, value] plus `--allow-degraded CONTROLLER` where this host gives us no cgroup for
    it (an ordinary user on cgroup v1): labbox refuses such a limit otherwise (exit 125)."""
    opts = [flag, str(value)]
    if not host_can_enforce(controller):
        opts += ["--allow-degraded", controller]
    return opts


def disk_limit_opts(value):
    """--disk-limit VALUE, which is exp/'s own file system as root; an ordinary user cannot
    mount one, and accepts the polled limit explicitly (labbox refuses it otherwise)."""
    return ["--disk-limit", str(value)] + ([] if IS_ROOT else ["--allow-degraded", "disk"])


def assert_enforced_by(r, field, controller):
    """isolation.FIELD names what really enforced the limit: a cgroup when this host offers
    one, else the accepted rlimit fallback."""
    iso = r.result.get("isolation") or {}
    got = iso.get(field)
    if host_can_enforce(controller):
        assert isinstance(got, str) and got.startswith("cgroup"), (field, got, r.why())
    else:
        assert isinstance(got, str) and got.startswith("rlimit"), (field, got, r.why())


# --- verdicts -----------------------------------------------------------------------------------

def assert_failed_with(r, exception=None, classes=None, status="failed", rc=1, text=None):
    """The run failed, and the verdict names the attack's error: the exception type in
    failure.exception (or failure.summary), its class in failure.class."""
    assert r.rc == rc, r.why()
    assert r.result["status"] == status, r.why()
    f = r.result.get("failure") or {}
    if classes:
        assert f.get("class") in classes, f"failure.class {f.get('class')!r} not in {classes}\n{r.why()}"
    if exception:
        names = exception if isinstance(exception, (tuple, list)) else (exception,)
        blob = " ".join([str(f.get("exception", "")), f.get("summary", "")] + f.get("evidence", []))
        assert any(n in blob for n in names), f"the verdict does not name {names}\n{r.why()}"
    if text:
        blob = json.dumps(f)
        assert text in blob, f"the verdict does not say {text!r}\n{r.why()}"


DENIED = dict(exception="PermissionError", classes=("sandbox_restriction",))


def assert_completed(r):
    assert r.rc == 0 and r.result["status"] == "completed", r.why()


def secret_free(r, *secrets, extra_paths=()):
    """Every secret absent from what labbox handed back: its stdout and stderr, every file of the
    run directory (exp/ included), and EXTRA_PATHS."""
    blobs = [("stdout", r.stdout), ("stderr", r.stderr)]
    if r.run_dir and r.run_dir.is_dir():
        for dirpath, _, filenames in os.walk(r.run_dir):
            for n in filenames:
                p = os.path.join(dirpath, n)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                try:
                    with open(p, "rb") as f:
                        blobs.append((p, f.read(64 * MiB).decode("latin-1")))
                except OSError:
                    pass
    for p in extra_paths:
        try:
            blobs.append((str(p), Path(p).read_bytes().decode("latin-1")))
        except OSError:
            pass
    for s in secrets:
        for where, text in blobs:
            assert s not in text, f"secret {s[:16]}... leaked into {where}"


# --- processes seen from the host -----------------------------------------------------------------

def ns_of(pid, kind="pid"):
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def pids_in_ns(ns, kind="pid"):
    """Host pids of every process whose KIND namespace is NS (e.g. 'pid:[4026532]')."""
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit() and ns_of(e, kind) == ns:
            out.append(int(e))
    return out


def children_of(pid):
    kids = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                s = f.read()
            if int(s[s.rindex(")") + 2:].split()[1]) == pid:
                kids.append(int(e))
        except (OSError, ValueError, IndexError):
            pass
    return kids


def proc_status(pid):
    """/proc/PID/status as {field: text}, or {} when the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def kb(status, field):
    try:
        return int(status[field].split()[0])
    except (KeyError, ValueError, IndexError):
        return 0


def status_field(pid, field):
    """A /proc/PID/status field as an int (kB for memory fields), or None."""
    st = proc_status(pid)
    return kb(st, field) if field in st else None


def meminfo(field):
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


NS_KINDS = ("user", "mnt", "net", "pid", "ipc", "uts")


def kill_ns(ns):
    for p in pids_in_ns(ns):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def pin_ns(pid, ns):
    """A descriptor of PID's pid namespace when it is NS, else None. While it is open the
    namespace lives on, so its inode number, by which pids_in_ns finds its processes, is not
    handed to a namespace made after this one ends (another labbox run on the machine, a
    parallel test's)."""
    try:
        fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.readlink(f"/proc/self/fd/{fd}") == ns:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


class NsStats:
    """What the host saw of the processes of one pid namespace."""

    def __init__(self, ns, init_pid):
        self.ns = ns
        self.init_pid = init_pid
        # kept while this record is (run_survivors looks for the namespace's processes
        # after the run)
        self.pin = pin_ns(init_pid, ns) if ns and init_pid else None
        self.is_run = False    # the experiment's (its main process works in exp/)
        self.done = False
        self.seen = set()
        self.peak_procs = 0
        self.peak_threads = 0
        self.peak_rss_sum_kb = 0
        self.hwm = {}          # pid -> VmHWM kB
        self.uids = set()      # (name, (real, effective, saved, fs)) of every payload process
        self.ns_seen = {}      # kind -> {namespace: name of a process in it}
        self.roots = {}        # (st_dev, st_ino) of /proc/PID/root -> name of a process

    def __del__(self):
        if getattr(self, "pin", None) is not None:
            os.close(self.pin)

    def sample(self, runs_dir):
        if self.pin is None and self.ns:
            # not pinned (its first process was gone before it could be): its inode number
            # may be another namespace's by now, so it is sampled no further
            self.done = True
            return
        pids = pids_in_ns(self.ns)
        if not pids:
            self.done = True
            return
        threads = rss = 0
        for p in pids:
            st = proc_status(p)
            if not st:
                continue
            threads += kb(st, "Threads")
            # what the tree holds of its own: the pages of shared files (the interpreter,
            # its libraries, mapped once however many processes map them) counted once
            # would be the kernel's charge; counted per process they are not the tree's
            rss += (kb(st, "RssAnon") + kb(st, "RssShmem")) if "RssAnon" in st else kb(st, "VmRSS")
            h = kb(st, "VmHWM")
            if h:
                self.hwm[p] = max(self.hwm.get(p, 0), h)
            if p == self.init_pid:
                continue
            if not self.is_run:
                try:
                    self.is_run = os.readlink(f"/proc/{p}/cwd").startswith(runs_dir)
                except OSError:
                    pass
            try:
                # not labbox's own image setting up the payload before its exec (it drops
                # the sandbox's root only then): what the experiment runs as
                if not own_setup(p):
                    self.uids.add((st.get("Name", "?"),
                                   tuple(int(x) for x in st["Uid"].split())))
            except (KeyError, ValueError):
                pass
            for kind in NS_KINDS:
                ns = ns_of(p, kind)
                if ns:
                    self.ns_seen.setdefault(kind, {}).setdefault(ns, st.get("Name", "?"))
            try:
                s = os.stat(f"/proc/{p}/root")
                self.roots.setdefault((s.st_dev, s.st_ino), st.get("Name", "?"))
            except OSError:
                pass
        self.seen.update(pids)
        self.peak_procs = max(self.peak_procs, len(pids))
        self.peak_threads = max(self.peak_threads, threads)
        self.peak_rss_sum_kb = max(self.peak_rss_sum_kb, rss)


def own_setup(pid):
    """Whether the process is labbox's own binary (the payload before its exec); False when
    that cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/exe") == LABBOX_REAL
    except OSError:
        return False


class LiveRun:
    """`labbox run --json` started in the background and watched from the host while it runs.

    About 20 times a second it samples labbox's own VmHWM and every sandbox labbox starts (a
    child in a new pid namespace: the static check's compile() runs in one too). The one whose
    processes work in the run directory is the experiment's; of it, the sampler keeps the pids,
    the peak process and thread counts, the peak summed RSS, each process's VmHWM, their uids,
    namespaces and roots. stdout and stderr go to files, so an experiment that floods its
    output cannot fill the test's memory.
    """

    def __init__(self, expdir, runs_dir, *opts, args=(), env=None, cwd=None, python=PYTHON,
                 quiet=True, stdin=subprocess.DEVNULL, popen_kw=None, shmem=False, disk=None):
        self.runs_dir = Path(runs_dir)
        self.io_dir = Path(runs_dir).parent / ("io-" + uuid.uuid4().hex[:8])
        self.io_dir.mkdir(parents=True)
        cmd = [LABBOX, "run", "--json", *POLICY, "--python", python, "--runs-dir", str(runs_dir)]
        if quiet:
            cmd.append("-q")
        cmd += [*map(str, opts), str(expdir)]
        if args:
            cmd += ["--", *map(str, args)]
        self.labbox_hwm_kb = 0
        self.shmem_base = meminfo("Shmem") if shmem else None
        self.peak_shmem = 0
        self.disk = disk       # a host path whose file system's free space is watched
        self.disk_before = free_bytes(disk) if disk else None
        self.min_free = self.disk_before
        self.sandboxes = {}    # pid namespace -> NsStats
        self._empty = NsStats(None, None)
        self._out = open(self.io_dir / "stdout", "wb")
        self._err = open(self.io_dir / "stderr", "wb")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=self._err, stdin=stdin,
                                     env=env, cwd=cwd, **(popen_kw or {}))
        self._mine = ns_of(os.getpid())
        self._stop = False
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    @property
    def run(self):
        """The experiment's sandbox (NsStats); an empty one until it was seen."""
        for s in self.sandboxes.values():
            if s.is_run:
                return s
        return self._empty

    def __getattr__(self, name):
        # peak_procs, peak_threads, peak_rss_sum_kb, hwm, uids, ns_seen, roots, init_pid
        if name.startswith("_") or name in ("sandboxes",):
            raise AttributeError(name)
        return getattr(self.run, name)

    @property
    def pidns(self):
        return self.run.ns

    def sample(self):
        hwm = status_field(self.proc.pid, "VmHWM")
        if hwm:
            self.labbox_hwm_kb = max(self.labbox_hwm_kb, hwm)
        if self.shmem_base is not None:
            self.peak_shmem = max(self.peak_shmem, meminfo("Shmem") - self.shmem_base)
        if self.disk:
            self.min_free = min(self.min_free, free_bytes(self.disk))
        for kid in children_of(self.proc.pid):
            ns = ns_of(kid)
            if ns and ns != self._mine and ns not in self.sandboxes:
                self.sandboxes[ns] = NsStats(ns, kid)
        for s in list(self.sandboxes.values()):
            if not s.done:
                s.sample(str(self.runs_dir))

    def _watch(self):
        while not self._stop and self.proc.poll() is None:
            self.sample()
            time.sleep(0.05)

    def wait_started(self, predicate, timeout=60):
        """Wait until PREDICATE(run_dir) is true for the run's directory (e.g. a line in run.log)."""
        def ok():
            if self.proc.poll() is not None:
                return True
            for d in run_dirs(self.runs_dir):
                try:
                    if predicate(d):
                        return True
                except OSError:
                    pass
            return False
        return wait_for(ok, timeout) and self.proc.poll() is None

    def wait(self, timeout=CALL_TIMEOUT):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"labbox did not finish within {timeout}s (a hang)")
        finally:
            self._stop = True
            self._thread.join(5)
            self._out.close()
            self._err.close()
        return self.as_run()

    def as_run(self):
        class P:
            pass
        p = P()
        p.returncode = self.proc.returncode
        p.stdout = (self.io_dir / "stdout").read_bytes().decode(errors="replace")
        p.stderr = (self.io_dir / "stderr").read_bytes()[-100000:].decode(errors="replace")
        return Run(p, self.runs_dir, time.monotonic() - self.t0)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for ns in self.sandboxes:
            kill_ns(ns)


def run_survivors(lr, r=None, marker=None, timeout=10.0, run_dir=None):
    """Everything of the run still alive on the host after TIMEOUT seconds: processes of its pid
    namespace, processes whose working directory is inside its run directory, processes whose
    command line carries MARKER."""
    deadline = time.monotonic() + timeout
    while True:
        left = set(pids_in_ns(lr.pidns)) if lr.pidns else set()
        if marker:
            left.update(pids_with_marker(marker))
        rd = run_dir or (r.run_dir if r is not None else None)
        if rd:
            for e in os.listdir("/proc"):
                if e.isdigit():
                    try:
                        if os.readlink(f"/proc/{e}/cwd").startswith(str(rd)):
                            left.add(int(e))
                    except OSError:
                        pass
        if not left or time.monotonic() > deadline:
            return sorted(left)
        time.sleep(0.1)


def assert_one_namespace_each(lr):
    """Every process of the run stayed in the sandbox's namespaces and under its root."""
    assert lr.pidns, "the host never saw the sandbox's init in a new pid namespace"
    for kind, seen in lr.ns_seen.items():
        assert len(seen) == 1, f"processes of the run in several {kind} namespaces: {seen}"
    assert len(lr.roots) <= 1, f"processes of the run under different roots: {lr.roots}"


def reachable_by_others(path):
    """Whether a user other than the owner and group could reach PATH: every directory on the
    way has the search bit for others."""
    p = Path(path).parent
    while True:
        try:
            if not os.stat(p).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        if p == p.parent:
            return True
        p = p.parent


def tree_digest(root):
    """{relpath: sha256 or link target} of everything under ROOT."""
    import hashlib
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames + dirnames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "link:" + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
            else:
                out[rel] = "dir:%o" % os.stat(p).st_mode
    return out


def sha256_file(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def log_has(text):
    def pred(run_dir):
        p = run_dir / "run.log"
        return p.exists() and text in p.read_text(errors="replace")
    return pred


# --- host-side canaries --------------------------------------------------------------------------

def ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


class Canary:
    """A server on the host that records everything that reaches it.

    kind: tcp (accepts, records the peer and the first bytes, answers HELLO), udp (records
    datagrams, echoes them), unix (a listening AF_UNIX socket at a path or an abstract name).
    """

    def __init__(self, kind, host="127.0.0.1", port=0, path=None):
        self.kind = kind
        self.events = []
        self._stop = False
        if kind in ("tcp", "udp"):
            fam = socket.AF_INET6 if ":" in host else socket.AF_INET
            self.sock = socket.socket(fam, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((host, port))
            self.port = self.sock.getsockname()[1]
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind(path)
            self.port = None
        if kind != "udp":
            self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self._stop:
            try:
                if self.kind == "udp":
                    data, addr = self.sock.recvfrom(65536)
                    self.events.append((addr, data))
                    try:
                        self.sock.sendto(b"HOST-ECHO:" + data[:64], addr)
                    except OSError:
                        pass
                    continue
                conn, addr = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(1)
            data = b""
            try:
                conn.sendall(b"HELLO-FROM-HOST\n")
                data = conn.recv(4096)
            except OSError:
                pass
            self.events.append((addr, data))
            conn.close()

    def close(self):
        self._stop = True
        self.thread.join(2)
        self.sock.close()


def read_all_nonblocking(fd, limit=1 << 20):
    out = b""
    while len(out) < limit:
        r, _, _ = select.select([fd], [], [], 0.2)
        if not r:
            break
        try:
            b = os.read(fd, 65536)
        except OSError:
            break
        if not b:
            break
        out += b
    return out


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def is_asan_build():
    try:
        with open(LABBOX, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


libc = ctypes.CDLL(None, use_errno=True)
