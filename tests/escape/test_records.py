"""The run records are the user's own, other runs are out of the experiment's reach, and the
sandbox shows nothing of the host's network and cgroups. Checked from the host's side, as root
and (run-as-user) as an ordinary user."""
import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from escape_lib import IS_ROOT, LABBOX, PYTHON, CALL_TIMEOUT, run_dirs, run_exp, token, user_dirs


def run(*args, env=None, cwd=None):
    """labbox ARGS; stdout must be strict UTF-8 (it is JSON or labbox's own text), stderr
    carries the experiment's output as it wrote it."""
    p = subprocess.run([LABBOX, *map(str, args)], capture_output=True,
                       timeout=CALL_TIMEOUT, env=env, cwd=cwd)
    p.stdout = p.stdout.decode("utf-8")
    p.stderr = p.stderr.decode("utf-8", errors="replace")
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    return p, doc


def write(d: Path, main: str, **files):
    d.mkdir(parents=True, exist_ok=True)
    (d / "main.py").write_text(main)
    for k, v in files.items():
        (d / k).write_text(v)
    return d


@pytest.fixture
def runs_base(request, tmp_path):
    """Where the runs directory lives: a directory the sandbox would see (as a project under
    /srv is) when the host has one for this user, else tmp_path."""
    if IS_ROOT:
        return request.getfixturevalue("visible_dir")
    return tmp_path


def test_records_are_private_to_the_user(tmp_path, runs_base):
    exp = write(tmp_path / "exp", 'print("accuracy: 0.5")\n')
    runs = runs_base / "proj" / "runs"
    p, doc = run("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 0, p.stderr
    rd = Path(doc["run_dir"])
    assert stat.S_IMODE(runs.stat().st_mode) == 0o700
    assert stat.S_IMODE(rd.stat().st_mode) == 0o700
    for name in ("result.json", "manifest.json", "run.log", "environment.txt"):
        mode = stat.S_IMODE((rd / name).stat().st_mode)
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
    db = runs_base / "proj" / "labbox.db"
    assert stat.S_IMODE(db.stat().st_mode) & 0o077 == 0, oct(db.stat().st_mode)


SNOOP = r'''
import glob, json, os
here = os.getcwd()
runs = os.path.dirname(os.path.dirname(here))
seen = {"runs": sorted(os.listdir(runs)) if os.path.isdir(runs) else None, "read": []}
for p in glob.glob(os.path.join(runs, "*", "*")) + glob.glob(os.path.join(runs, "*", "exp", "*")):
    try:
        seen["read"].append(open(p, errors="replace").read())
    except OSError:
        pass
for p in glob.glob(os.path.join(os.path.dirname(runs), "labbox.db*")):
    try:
        seen["read"].append(open(p, "rb").read().decode("latin-1"))
    except OSError:
        pass
print(json.dumps(seen)[:200000])
print("accuracy: 1")
'''


def test_other_runs_are_hidden(tmp_path, runs_base):
    secret = token()
    runs = runs_base / "proj" / "runs"
    first = write(tmp_path / "first", f'print("note: {secret}")\nprint("accuracy: 1")\n',
                  **{"data.txt": secret})
    p, doc = run("run", "--json", "--python", PYTHON, "--runs-dir", runs, "-e",
                 f"TOKEN={secret}", first)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    snoop = write(tmp_path / "snoop", SNOOP)
    p, doc2 = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                  runs, snoop)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    log = (Path(doc2["run_dir"]) / "run.log").read_text()
    assert secret not in log, log[:3000]
    seen = json.loads(log.splitlines()[0])
    # its own run directory is all it sees of the runs directory
    assert seen["runs"] == [doc2["id"]], seen["runs"]


def test_secret_env_is_passed_but_never_recorded(tmp_path):
    secret = token()
    exp = write(tmp_path / "exp", 'import os\nprint("seen:", os.environ["API_KEY"] == '
                f'"{secret}")\nprint("accuracy: 1")\n')
    env = {**os.environ, "API_KEY": secret}
    p, doc = run("run", "--json", "--secret-env", "API_KEY", "--python", PYTHON, "--runs-dir",
                 tmp_path / "runs", exp, env=env)
    assert p.returncode == 0, p.stderr
    rd = Path(doc["run_dir"])
    assert "seen: True" in (rd / "run.log").read_text()
    for f in rd.iterdir():
        if f.is_file():
            assert secret not in f.read_text(errors="replace"), f.name
    # The index and its WAL (where the last runs' rows are until a checkpoint).
    index_files = list(tmp_path.glob("labbox.db*"))
    assert tmp_path / "labbox.db" in index_files
    for f in index_files:
        assert secret.encode() not in f.read_bytes(), f.name
    man = json.loads((rd / "manifest.json").read_text())
    assert man["config"]["sandbox"]["secret_env"] == ["API_KEY"], man["config"]["sandbox"]
    # rerun takes the value from its own environment again
    p, doc = run("rerun", "--json", "--runs-dir", tmp_path / "runs", doc["id"], env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    # an unset variable is a usage error naming it, not an empty value
    env.pop("API_KEY")
    p, _ = run("run", "--secret-env", "API_KEY", "--python", PYTHON, "--runs-dir",
               tmp_path / "runs", exp, env=env)
    assert p.returncode == 2 and "API_KEY" in p.stderr, p.stderr


def host_interfaces():
    names = [n for n in os.listdir("/sys/class/net") if n != "lo"]
    macs = set()
    for n in names:
        try:
            mac = Path(f"/sys/class/net/{n}/address").read_text().strip()
        except OSError:
            continue
        if mac and mac != "00:00:00:00:00:00":
            macs.add(mac)
    return names, macs


SYSFS = r'''
import glob, json, os
out = {"net": sorted(os.listdir("/sys/class/net")), "addresses": [], "cgroups": []}
n = 0
for root, dirs, files in os.walk("/sys/devices"):
    n += 1
    if n > 20000:
        break
    if "address" in files:
        try:
            out["addresses"].append(open(os.path.join(root, "address")).read().strip())
        except OSError:
            pass
for root, dirs, files in os.walk("/sys/fs/cgroup"):
    out["cgroups"] += [os.path.join(root, d) for d in dirs]
    if len(out["cgroups"]) > 2000:
        break
print(json.dumps(out))
print("accuracy: 1")
'''


def test_sys_shows_no_host_network_or_cgroups(tmp_path):
    names, macs = host_interfaces()
    if not names:
        pytest.skip("this host has no network interface but loopback")
    exp = write(tmp_path / "exp", SYSFS)
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout + p.stderr
    seen = json.loads((Path(doc["run_dir"]) / "run.log").read_text().splitlines()[0])
    assert seen["net"] == ["lo"], seen["net"]
    assert not (macs & set(seen["addresses"])), (macs, seen["addresses"][:20])
    assert seen["cgroups"] == [], seen["cgroups"][:20]


@pytest.fixture
def small_fs(tmp_path):
    """A 4 MiB file system of its own for the runs (tmpfs; mounting needs root)."""
    if not IS_ROOT:
        pytest.skip("mounting a small file system for the runs needs root")
    d = tmp_path / "fs"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(d)], check=True)
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


def fill(d: Path):
    """Every byte of d's file system taken (unbuffered: a buffered file would raise the
    last partial write's ENOSPC again when it is closed)."""
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"\0")
    except OSError:
        pass
    os.close(fd)


def test_runs_file_system_full_is_an_infra_error(tmp_path, small_fs):
    """The disk of the runs fills up while the experiment runs: the records cannot be
    written, so the verdict is infra_error (125) naming what was not written, never
    "completed", and no result.json says "running"."""
    import time
    exp = write(tmp_path / "exp", 'import time\nprint("STARTED", flush=True)\n'
                'time.sleep(3)\nprint("accuracy: 1")\n')
    runs = small_fs / "runs"
    p = subprocess.Popen([LABBOX, "run", "--json", "--python", PYTHON, "--disk-limit", "0",
                          "--runs-dir", str(runs), str(exp)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        logs = list(runs.glob("*/run.log")) if runs.is_dir() else []
        if logs and "STARTED" in logs[0].read_text():
            break
        time.sleep(0.05)
    else:
        p.kill()
        raise AssertionError("the experiment never started")
    fill(small_fs)
    out, err = p.communicate(timeout=CALL_TIMEOUT)
    assert p.returncode == 125, (p.returncode, out[-2000:], err[-2000:])
    doc = json.loads(out)
    assert doc["status"] == "infra_error", doc["status"]
    assert doc["infra_error"]["step"] == "record", doc["infra_error"]
    assert "No space left" in doc["infra_error"]["message"], doc["infra_error"]
    assert doc["failure"]["class"] == "infra_error"
    res = Path(doc["run_dir"]) / "result.json"
    if res.exists():
        assert json.loads(res.read_text())["status"] == "infra_error"


def test_records_are_valid_utf8_whatever_the_names(tmp_path):
    """Directory and file names that are not UTF-8, and output that is not either: every
    JSON document labbox writes is strict UTF-8, and the names come back byte for byte
    (the escape is Python's surrogateescape)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    os.makedirs(os.fsencode(str(exp)) + b"/sub_\xe9", exist_ok=True)
    names = [b"data_\xff\xfe.txt", b"sub_\xe9/x\x80.csv"]
    for n in names:
        with open(os.fsencode(str(exp)) + b"/" + n, "wb") as f:
            f.write(b"1\n")
    (exp / "main.py").write_text(
        'import sys\n'
        'sys.stdout.buffer.write(b"acc\\xff: 0.5\\nnote: caf\\xe9\\n")\n'
        'sys.stdout.flush()\n'
        'raise ValueError(b"bad \\xff".decode("latin-1"))\n')
    p, doc = run("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    rd = Path(doc["run_dir"])
    for name in ("result.json", "manifest.json"):
        raw = (rd / name).read_bytes()
        raw.decode("utf-8")  # strict: raises on any invalid byte
        json.loads(raw)
    man = json.loads((rd / "manifest.json").read_bytes())
    staged = {os.fsencode(k) for k in man["files"]}
    assert set(names) <= staged, staged


COUNTERS = r'''
import ctypes, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    fds.append(fd)
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = 0
# sigqueue, not kill: only queued signals count against the allowance
while queued < 10000000 and libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), 0) == 0:
    queued += 1
print(f"inotify: {len(fds)}", flush=True)
print(f"queued: {queued}", flush=True)
print("HOLD", flush=True)
time.sleep(4)
'''


def test_per_user_kernel_counters_are_capped(tmp_path):
    """An experiment takes every inotify instance and queued signal it can; meanwhile this
    process, of the user labbox runs as, still gets its own."""
    import ctypes
    import signal
    import time
    exp = write(tmp_path / "exp", COUNTERS)
    runs = tmp_path / "runs"
    p = subprocess.Popen([LABBOX, "run", "--json", "--policy", "permissive", "--python", PYTHON,
                          "--runs-dir", str(runs), str(exp)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            logs = list(runs.glob("*/run.log")) if runs.is_dir() else []
            if logs and "HOLD" in logs[0].read_text():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the experiment never got to hold its counters")
        libc = ctypes.CDLL(None, use_errno=True)
        mine = []
        for _ in range(8):
            fd = libc.inotify_init1(0)
            assert fd >= 0, f"inotify_init1 failed on the host: errno {ctypes.get_errno()}"
            mine.append(fd)
        for fd in mine:
            os.close(fd)
        sig = signal.SIGRTMIN + 1
        old = signal.signal(sig, lambda *a: None)
        signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
        try:
            for _ in range(8):
                rc = libc.sigqueue(os.getpid(), int(sig), 0)
                assert rc == 0, f"sigqueue failed on the host: errno {ctypes.get_errno()}"
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            signal.signal(sig, old)
    finally:
        out, _ = p.communicate(timeout=CALL_TIMEOUT)
    log = logs[0].read_text()
    got = dict(l.split(": ") for l in log.splitlines() if l.startswith(("inotify", "queued")))
    assert 0 < int(got["inotify"]) < 1000 and 0 < int(got["queued"]) < 1000000, got


KERNEL = r'''
import json, os
out = {}
for p in ["/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug"]:
    try:
        out[p] = open(p).read()[:2000]
    except OSError as e:
        out[p] = "error: %s" % e.strerror
for d in ["/proc/acpi", "/sys/firmware"]:
    out[d] = sorted(os.listdir(d)) if os.path.isdir(d) else None
print(json.dumps(out))
print("accuracy: 1")
'''


@pytest.mark.parametrize("network", ["none", "host"])
def test_kernel_internals_are_masked(tmp_path, network):
    """Timer and scheduler internals name the host's processes, keys and firmware tables the
    host's secrets and hardware: the sandbox reads them as empty, with the host's network
    too (where the host's /sys is shown)."""
    exp = write(tmp_path / "exp", KERNEL)
    p, doc = run("run", "--json", "--policy", "permissive", "--network", network, "--python",
                 PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    seen = json.loads((Path(doc["run_dir"]) / "run.log").read_text().splitlines()[0])
    for f in ("/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug"):
        assert seen[f] in ("", "error: No such file or directory"), (f, seen[f][:300])
    for d in ("/proc/acpi", "/sys/firmware"):
        assert not seen[d], (d, seen[d])
    # the host itself has them (so the test can fail)
    assert os.path.exists("/proc/timer_list") and os.path.isdir("/sys/firmware")


def test_records_stay_hidden_inside_a_volume_that_contains_them(tmp_path):
    """`-v $PWD:/work` with the runs in $PWD/.labbox: another run's records (its -e values
    among them) and the index stay out of reach inside the volume too."""
    secret = token()
    proj = tmp_path / "proj"
    proj.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(proj, 0o755)
    first = write(proj / "first", 'print("accuracy: 1")\n')
    p, _ = run("run", "--json", "-e", f"API_KEY={secret}", "--python", PYTHON, first, cwd=proj)
    assert p.returncode == 0, p.stderr
    half = len(secret) // 2
    snoop = write(proj / "snoop", r'''
import glob
secret = "%s" + "%s"  # in two halves, so this file does not hold it
found = []
for p in glob.glob("/work/**", recursive=True) + glob.glob("/work/.labbox/**", recursive=True):
    try:
        if secret in open(p, errors="replace").read():
            found.append(p)
    except OSError:
        pass
print("FOUND", found)
print("accuracy: 1")
''' % (secret[:half], secret[half:]))
    p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{proj}:/work:ro",
                 "--python", PYTHON, snoop, cwd=proj)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "FOUND []" in log, log[-2000:]


def test_cgroup_path_of_the_host_is_not_shown(tmp_path):
    exp = write(tmp_path / "exp", 'print(open("/proc/self/cgroup").read())\nprint("accuracy: 1")\n')
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 tmp_path / "runs", exp)
    assert p.returncode == 0, p.stderr
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    paths = [l.split(":", 2)[2] for l in log.splitlines() if l.count(":") >= 2 and l[0].isdigit()]
    assert paths and all(x == "/" for x in paths), log
    assert "labbox-" not in log


MOUNTS = r'''
import json
print(json.dumps(open("/proc/self/mountinfo").read().splitlines()))
print("accuracy: 1")
'''


def host_mounts_under(dirs):
    """The host's own mount points at or under dirs (unescaped as mountinfo has them)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mp = line.split(" ")[4].encode().decode("unicode_escape")
        if any(mp == d or mp.startswith(d + "/") for d in dirs):
            found.append(mp)
    return found


COVERED = ["/proc", "/dev", "/sys", "/run", "/home", "/root", "/tmp", "/var/tmp"]


def mount_rows(lines):
    """(mount point, (device, root in its file system), fstype) of mountinfo lines."""
    rows = []
    for l in lines:
        f = l.split(" ")
        mp = f[4].encode().decode("unicode_escape")
        rows.append((mp, (f[2], f[3].encode().decode("unicode_escape")), l.split(" - ")[1].split(" ")[0]))
    return rows


def host_rows_under(dirs):
    return [r for r in mount_rows(Path("/proc/self/mountinfo").read_text().splitlines())
            if any(r[0] == d or r[0].startswith(d + "/") for d in dirs)]


def sandbox_mounts(tmp_path, runs):
    exp = write(tmp_path / "exp", MOUNTS)
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 runs, exp)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads((Path(doc["run_dir"]) / "run.log").read_text().splitlines()[0])


def test_mount_table_does_not_list_the_hosts_covered_mounts(tmp_path):
    """Where the sandbox mounts file systems of its own (/proc, /dev, /sys, the hidden and
    private directories), the host's mounts beneath them (the host's devtmpfs with its size,
    /dev/shm, /dev/pts, the cgroup hierarchies, /run's netns and services, other users'
    homes) are not in the sandbox's mount table, for root and for an ordinary user alike:
    the root is built mount by mount and never takes them along."""
    host = host_rows_under(COVERED)
    # the host does have mounts there, so the test can fail
    assert len(host) > len(COVERED) // 2, host
    rows = mount_rows(sandbox_mounts(tmp_path, tmp_path / "runs"))
    seen = [(mp, fstype) for mp, _, fstype in rows]
    points = [mp for mp, _, _ in rows]
    # labbox's own file systems are there, each mounted once where it is the top
    for d, fstype in (("/", "tmpfs"), ("/proc", "proc"), ("/dev", "tmpfs"), ("/sys", "sysfs"),
                      ("/tmp", "tmpfs")):
        assert (d, fstype) in seen, (d, seen)
    # no mount of the host's from under those places, wherever it would be listed
    shown = {src for _, src, _ in rows}
    leaked = [r for r in host if r[1] in shown]
    assert leaked == [], leaked
    for mp, src, fstype in rows:
        # device nodes bound one by one (/dev/null, and over masked files), not the tree
        assert fstype != "devtmpfs" or src[1] != "/", (mp, seen)
        assert fstype not in ("cgroup", "cgroup2", "devpts"), (mp, fstype)
    for d in COVERED:
        assert points.count(d) == 1, (d, points)
    under = [mp for mp in points if any(mp.startswith(d + "/") for d in ("/run", "/home",
                                                                          "/root", "/var/tmp"))]
    assert [mp for mp in under if not mp.startswith("/run/labbox-gate/")] == [], under


PROBE = r'''
import json, os
found = {}
for d in %r:
    try:
        found[d] = sorted(os.listdir(d))
    except OSError as e:
        found[d] = e.errno
print(json.dumps({"mounts": open("/proc/self/mountinfo").read().splitlines(), "found": found}))
print("accuracy: 1")
'''


def test_mounts_under_hidden_directories_never_enter_the_sandbox(tmp_path, visible_dir):
    """A file system the host mounts inside a hidden directory (another user's home, the
    runs directory of a project under /srv) is neither listed in the sandbox's mount table
    nor reachable through it: under /home it is never cloned, under a hidden directory inside
    a bound one it is taken off the clone before the cover goes on."""
    home = Path(tempfile.mkdtemp(prefix="labbox-escape-", dir="/home"))
    runs = visible_dir / "proj" / "runs"
    places = [home / "mnt", runs / "mnt"]
    mounted = []
    try:
        for m in places:
            m.mkdir(parents=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "labbox-probe", m], check=True)
            mounted.append(m)
            (m / "canary").write_text(token())
        host = [r for r in host_rows_under([str(m) for m in places])]
        assert len(host) == 2, host
        exp = write(visible_dir / "exp", PROBE % [str(m) for m in places])
        p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON,
                     "--runs-dir", runs, exp)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        out = json.loads((Path(doc["run_dir"]) / "run.log").read_text().splitlines()[0])
    finally:
        for m in mounted:
            subprocess.run(["umount", m], check=False)
        shutil.rmtree(home, ignore_errors=True)
    rows = mount_rows(out["mounts"])
    assert [r for r in rows if r[2] == "tmpfs" and r[1] in {h[1] for h in host}] == [], rows
    assert not any("labbox-probe" in l for l in out["mounts"]), out["mounts"]
    for m in places:
        assert out["found"][str(m)] in (errno.ENOENT, []), out["found"]


LAYOUT = r'''
import errno, json, os, subprocess
links = {n: os.readlink("/" + n) for n in os.listdir("/") if os.path.islink("/" + n)}
try:
    open("/labbox-new-entry", "w")
    root = "written"
except OSError as e:
    root = errno.errorcode[e.errno]
try:
    os.mkdir("/usr/labbox-new-entry")
    usr = "written"
except OSError as e:
    usr = errno.errorcode[e.errno]
sh = subprocess.run(["/bin/sh", "-c", "echo through-bin"], capture_output=True, text=True).stdout
print(json.dumps({"links": links, "root": root, "usr": usr, "sh": sh,
                  "entries": sorted(os.listdir("/"))}))
print("accuracy: 1")
'''


def test_root_is_read_only_and_keeps_the_hosts_top_level(tmp_path):
    """The new root holds the host's top-level entries: each symlink as it is on the host
    (/bin -> usr/bin on a merged /usr, through which the shell starts), each directory bound
    read-only; nothing can be added to the root itself."""
    exp = write(tmp_path / "exp", LAYOUT)
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = json.loads((Path(doc["run_dir"]) / "run.log").read_text().splitlines()[0])
    host_links = {n: os.readlink("/" + n) for n in os.listdir("/") if os.path.islink("/" + n)}
    assert out["links"] == host_links, (out["links"], host_links)
    assert out["root"] == "EROFS" and out["usr"] == "EROFS", out
    assert out["sh"] == "through-bin\n", out
    for n in os.listdir("/"):
        st = os.lstat("/" + n)
        if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            assert n in out["entries"], (n, out["entries"])


def test_sweeps_beside_the_runs_are_hidden(tmp_path, visible_dir):
    """sweep.json (every cell's results, the -e values of the sweep's command line) lives in
    sweeps/ beside the runs directory: out of reach like the runs. The records are given to
    the payload's uid, as an ordinary user's own records are to hers."""
    secret = token()
    proj = visible_dir / "proj"
    exp = write(visible_dir / "exp", 'import sys\nprint("accuracy: 1")\n')
    p = subprocess.run([LABBOX, "sweep", "--policy", "permissive", "--python", PYTHON,
                        "--runs-dir", proj / "runs", "--param", "lr=1,2", "--seeds", "0",
                        "-e", f"API_KEY={secret}", exp], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert p.returncode == 0, p.stderr[-2000:]
    sweeps = proj / "sweeps"
    assert any(sweeps.rglob("sweep.json"))
    for q in [sweeps, *sweeps.rglob("*")]:
        os.chown(q, 65534, 65534)
    half = len(secret) // 2
    spy = write(visible_dir / "spy", r'''
import os
secret = "%s" + "%s"
seen, found = [], []
for root, dirs, files in os.walk("%s"):
    seen += dirs + files
    for f in files:
        try:
            if secret in open(os.path.join(root, f), errors="replace").read():
                found.append(f)
        except OSError:
            pass
print("SEEN", seen, "FOUND", found)
print("accuracy: 1")
''' % (secret[:half], secret[half:], sweeps))
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 proj / "runs", spy)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "SEEN [] FOUND []" in log, log[-2000:]


def test_other_projects_runs_are_hidden_too(tmp_path, visible_dir):
    """An ordinary user's experiment runs with the user's uid, so the runs directory of
    another project outside the home (/srv/a/.labbox/runs, with its manifests' -e values, the
    index and the sweeps beside it) is plain readable to it unless labbox hides it as it
    hides the run's own. As root the records are given to the payload's uid to stand for
    that."""
    secret = token()
    env = user_dirs(visible_dir / "cache")
    first = visible_dir / "first" / ".labbox"
    exp = write(visible_dir / "exp", 'print("accuracy: 1")\n')
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 first / "runs", "-e", f"API_KEY={secret}", exp, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    for q in [first, *first.rglob("*")]:
        os.chown(q, 65534, 65534)
    half = len(secret) // 2
    spy = write(visible_dir / "spy", r'''
import os
secret = "%s" + "%s"
seen, found = [], []
for root, dirs, files in os.walk("%s"):
    seen += dirs + files
    for f in files:
        try:
            if secret in open(os.path.join(root, f), errors="replace").read():
                found.append(f)
        except OSError:
            pass
print("SEEN", sorted(seen), "FOUND", found)
print("accuracy: 1")
''' % (secret[:half], secret[half:], first))
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 visible_dir / "second" / ".labbox" / "runs", spy, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    # the names of the hidden places may show (as the run's own do), nothing of what they hold
    assert "FOUND []" in log, log[-2000:]
    run_id = Path(doc["run_dir"]).name
    assert "manifest.json" not in log and "result.json" not in log, log[-2000:]
    assert not any(n.startswith(run_id[:8]) for n in log.split("'")), log[-2000:]
    # `labbox exec` runs a command no more trusted than an experiment: the same holds
    p = subprocess.run([LABBOX, "exec", "--", "/bin/sh", "-c",
                        f"cat {first}/runs/*/manifest.json; ls {first}/runs"],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT, env=env)
    assert secret not in p.stdout + p.stderr, p.stdout[-2000:]
    assert "manifest.json': No such file" in p.stderr, p.stderr[-2000:]


def _project_with_a_secret(proj, secret, env, *, owner_dirs=()):
    """A project whose runs directory holds a manifest with an -e secret; as root, its
    records (and owner_dirs) are given to the payload's uid, which stands for the user's."""
    first = write(proj / "first", 'print("accuracy: 1")\n')
    p, _ = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
               proj / ".labbox" / "runs", "-e", f"API_KEY={secret}", first, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    return first


def _give_to_payload(proj, *more):
    if IS_ROOT:
        for q in [*more, proj / ".labbox", *(proj / ".labbox").rglob("*")]:
            os.chown(q, 65534, 65534)


_SNOOP = r'''
import glob, os
secret = "%s" + "%s"  # in two halves, so this file does not hold it
%s
found, seen = [], 0
for p in glob.glob("%s/**", recursive=True) + glob.glob("%s/.labbox/**", recursive=True):
    seen += 1
    try:
        if secret in open(p, errors="replace").read():
            found.append(p)
    except OSError:
        pass
print("FOUND", found, "SEEN", seen)
print("accuracy: 1")
'''


def _snoop(d, secret, root, before=""):
    """An experiment that looks for secret in every file under root (and its .labbox)."""
    half = len(secret) // 2
    return write(d, _SNOOP % (secret[:half], secret[half:], before, root, root))


def test_other_projects_runs_under_tmp_stay_hidden_where_a_volume_or_workdir_shows_them(
        tmp_path):
    """Another project's runs directory in a place the sandbox replaces (/tmp here, a home
    likewise) costs nothing to hide there, but a volume or exec's work directory that shows
    its project must not show its records: the manifests' -e values, the index."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    proj = tmp_path / "proj"
    proj.mkdir()
    for d in (tmp_path, proj):
        os.chmod(d, 0o755)
    _project_with_a_secret(proj, secret, env)
    _give_to_payload(proj)
    snoop = _snoop(tmp_path / "snoop", secret, "/proj")
    # the second run keeps its records elsewhere: the first project's are known, not its own
    p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{proj}:/proj:ro",
                 "--python", PYTHON, "--runs-dir", tmp_path / "other" / "runs", snoop, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "FOUND []" in log and "SEEN 0" not in log, log[-2000:]
    manifests = f"{proj}/.labbox/runs/*/manifest.json"
    p = subprocess.run([LABBOX, "exec", "--workdir", str(proj), "--", "/bin/sh", "-c",
                        f"ls {proj}/first; cat {manifests} {proj}/.labbox/labbox.db"],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT, env=env)
    assert "main.py" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    assert secret not in p.stdout + p.stderr, p.stdout[-2000:]
    assert "manifest.json': No such file" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("how", ["cache-cleaned", "upgraded"])
def test_a_project_stays_hidden_after_a_cache_clean_up_or_an_upgrade(tmp_path, how):
    """The runs directories every run hides are labbox's state, not its cache: deleting the
    cache (as users and tools do freely) must not bring another project's records into sight.
    A list an older labbox kept in the cache is taken over."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    proj = tmp_path / "proj"
    proj.mkdir()
    for d in (tmp_path, proj):
        os.chmod(d, 0o755)
    _project_with_a_secret(proj, secret, env)
    _give_to_payload(proj)
    state = tmp_path / "cache-state"
    if how == "upgraded":  # as an older labbox left them: in the cache, no state
        for f in ("record.key", "runs-dirs"):
            shutil.move(state / "labbox" / f, tmp_path / "cache" / "labbox" / f)
        shutil.rmtree(state)
    else:
        shutil.rmtree(tmp_path / "cache")
    snoop = _snoop(tmp_path / "snoop", secret, "/proj", before=_KEY_PEEK)
    p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{proj}:/proj:ro",
                 "-v", f"{tmp_path}:/t:ro", "--python", PYTHON, "--runs-dir",
                 tmp_path / "other" / "runs", snoop, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "FOUND []" in log and "SEEN 0" not in log, log[-2000:]
    assert "KEY READ" not in log and "KEYS TRIED 2" in log, log[-2000:]


_KEY_PEEK = """
tried = 0
for k in ("/t/cache-state/labbox/record.key", "/t/cache/labbox/record.key"):
    tried += 1
    try:
        open(k, "rb").read()
        print("KEY READ", k)
    except OSError:
        pass
print("KEYS TRIED", tried)
"""


def test_a_project_stays_hidden_after_many_other_runs_directories_were_used(tmp_path):
    """The list of runs directories each run hides kept the 64 most recently used: a
    pipeline that gave 70 jobs a --runs-dir each pushed a live project out of it, and a
    volume of that project then showed its records (the manifests' -e values). Directories
    still there are kept (up to 1,024); only ones gone since make room."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    proj = tmp_path / "proj"
    proj.mkdir()
    for d in (tmp_path, proj):
        os.chmod(d, 0o755)
    _project_with_a_secret(proj, secret, env)
    _give_to_payload(proj)
    quick = tmp_path / "quick"
    quick.mkdir()
    (quick / "main.py").write_text("print('v: 1')\n")
    for i in range(70):
        p = subprocess.run([LABBOX, "run", "-q", "--runtime-gate", "off",
                            "--python", PYTHON, "--runs-dir", str(tmp_path / f"job{i}" / "runs"),
                            str(quick)], capture_output=True, text=True, timeout=CALL_TIMEOUT,
                           env=env)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    snoop = _snoop(tmp_path / "snoop", secret, "/proj")
    p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{proj}:/proj:ro",
                 "--python", PYTHON, "--runs-dir", tmp_path / "other" / "runs", snoop, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "FOUND []" in log and "SEEN 0" not in log, log[-2000:]


def test_a_project_moved_with_a_link_left_keeps_its_records_hidden(tmp_path):
    """The list of known runs directories holds the name each had when last used. A project
    moved since, with a link left at its old place, must be hidden where it now lies: a
    volume of its new place showed its manifests (their -e values) when the old name was
    compared with the volume's real path."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    os.chmod(tmp_path, 0o755)
    old = tmp_path / "old"
    _project_with_a_secret(old, secret, env)
    new = tmp_path / "data" / "new"
    new.parent.mkdir()
    os.chmod(new.parent, 0o755)
    old.rename(new)
    old.symlink_to(new)
    os.chmod(new, 0o755)
    _give_to_payload(new)
    snoop = _snoop(tmp_path / "snoop", secret, "/data")
    p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{new}:/data:ro",
                 "--python", PYTHON, "--runs-dir", tmp_path / "other" / "runs", snoop, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert "FOUND []" in log and "SEEN 0" not in log, log[-2000:]


def test_records_in_a_writable_volume_cannot_be_moved_out_of_sight(tmp_path):
    """Another project's records inside a volume given :rw are covered where they are; a
    run that renamed the project's .labbox (or the project) moved them, covers and all, to
    a place the next run did not know, and the next run read its manifests' -e values. The
    directories on the way are pinned: the rename is refused, the records stay put."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    shared = tmp_path / "shared"
    proj = shared / "projB"
    proj.mkdir(parents=True)
    for d in (tmp_path, shared, proj):
        os.chmod(d, 0o755)
    _project_with_a_secret(proj, secret, env)
    # open to the payload once the records are made (labbox makes none under a directory
    # others may write)
    os.chmod(shared, 0o777)
    _give_to_payload(proj, proj)
    moves = """
for a, b in (("/data/projB/.labbox", "/data/projB/moved"), ("/data/projB", "/data/gone")):
    try:
        os.rename(a, b)
        print("RENAMED", a)
    except OSError as e:
        print("KEPT", a, e.errno)
"""
    snoop = _snoop(tmp_path / "snoop", secret, "/data", before=moves)
    for _ in range(2):
        p, doc = run("run", "--json", "--policy", "permissive", "-v", f"{shared}:/data:rw",
                     "--python", PYTHON, "--runs-dir", tmp_path / "other" / "runs", snoop,
                     env=env)
        assert p.returncode == 0, p.stdout[-2000:]
        log = (Path(doc["run_dir"]) / "run.log").read_text()
        assert "FOUND []" in log and "RENAMED" not in log, log[-2000:]
    # from the host: the records are where they were
    assert list((proj / ".labbox" / "runs").glob("*/manifest.json")), list(shared.rglob("*"))


def test_an_experiments_venv_probed_in_the_sandbox_sees_no_records(tmp_path, visible_dir):
    """The experiment's own interpreter is probed (and its packages listed) in a sandbox of
    its own, where its venv's .pth files run: what they print lands in the run's records
    (environment.txt), a way out for another project's manifests, whose -e values a volume
    or a root that shows them would hand over. The records are hidden there too."""
    secret = token()
    env = user_dirs(visible_dir / "cache")
    proj = visible_dir / "projB"
    proj.mkdir()
    os.chmod(proj, 0o755)
    _project_with_a_secret(proj, secret, env)
    _give_to_payload(proj, proj)
    exp = write(tmp_path / "exp", 'print("accuracy: 1")\n')
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(exp / ".venv")], check=True, timeout=120)
    site = next((exp / ".venv" / "lib").glob("python3*/site-packages"))
    # only in the package listing (the probe's answer is strict): its lines become
    # environment.txt
    (site / "zz_leak.pth").write_text(
        "import glob, sys; [sys.stdout.write(open(p).read().replace(chr(10), ' ') + chr(10)) "
        f"for p in glob.glob({str(proj)!r} + '/.labbox/runs/*/manifest.json') "
        "if b'distributions' in open('/proc/self/cmdline', 'rb').read()]\n")
    p, doc = run("run", "--json", "--policy", "permissive", "--allow-degraded", "gate",
                 "--python", exp / ".venv" / "bin" / "python3", "--runs-dir",
                 tmp_path / "runs", exp, env=env)
    run_dir = Path(doc["run_dir"]) if doc and doc.get("run_dir") else None
    assert run_dir, (p.returncode, p.stdout[-2000:])
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(errors="replace"), f


def test_a_runs_directory_removed_while_a_run_sets_up_does_not_fail_it(visible_dir):
    """Every run hides each runs directory this user's labbox has used. One removed by its
    owner (a test's clean-up, a scratch project deleted) between labbox's look and the
    sandbox's mount has nothing left to hide: the run goes on, it does not fail as a setup
    error (CI saw exit 125, "hide ...: No such file or directory", from a parallel test's
    clean-up). The other project's directory is made and removed over and over while this
    project's runs start."""
    import threading
    env = user_dirs(visible_dir / "cache")
    exp = write(visible_dir / "exp", 'print("accuracy: 1")\n')
    other, mine = visible_dir / "other", visible_dir / "mine" / "runs"
    for runs in (other / "runs", mine):  # both on the list, this project's the latest
        p, _ = run("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp, env=env)
        assert p.returncode == 0, p.stdout[-2000:]
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            shutil.rmtree(other, ignore_errors=True)
            (other / "runs").mkdir(parents=True, exist_ok=True)

    t = threading.Thread(target=churn)
    t.start()
    failed = []
    try:
        for _ in range(20):
            p, doc = run("run", "--json", "--python", PYTHON, "--runs-dir", mine, exp, env=env)
            if p.returncode != 0:
                # what the run said, not the tail of a long document
                why = {k: (doc or {}).get(k) for k in ("status", "failure", "setup_step",
                                                        "setup_error", "error")}
                failed.append(f"rc={p.returncode} {why}\nstderr: {p.stderr[-1500:]}")
    finally:
        stop.set()
        t.join()
    assert not failed, failed[0]
    # still hidden when it is there: the cover is skipped only where nothing is left
    (other / "runs" / "r1").mkdir(parents=True, exist_ok=True)
    (other / "runs" / "r1" / "manifest.json").write_text("{}")
    spy = write(visible_dir / "spy", 'import os\nprint("SEEN", os.listdir(%r))\n'
                'print("accuracy: 1")\n' % str(other / "runs"))
    p, doc = run("run", "--json", "--policy", "permissive", "--python", PYTHON, "--runs-dir",
                 mine, spy, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    assert "SEEN []" in (Path(doc["run_dir"]) / "run.log").read_text()


ODD_ROOT = r'''
set -eu
R=$1
mount -t tmpfs -o mode=0755 labbox-odd-root "$R"
for d in usr etc var proc dev sys tmp; do
    mkdir "$R/$d"
    mount --rbind "/$d" "$R/$d"
done
for l in bin sbin lib lib32 lib64; do
    [ -L "/$l" ] && ln -s "$(readlink "/$l")" "$R/$l"
done
mkdir -p "$R/lbbin" && mount --bind "$(dirname "$2")" "$R/lbbin"
# what a host's / may also hold: a fifo, a socket, a device node, a dangling and an absolute
# symlink, plain files, an unreadable directory, a mount point with a mount under it, a name
# with a space and a newline, an empty file that is a mount point
mkfifo "$R/fifo"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$R/sock"
mknod "$R/nullnode" c 1 3
ln -s /nowhere/at/all "$R/dangling"
ln -s /usr "$R/absusr"
echo odd-file > "$R/file"
mkdir -m 000 "$R/locked"
mkdir "$R/data" && mount -t tmpfs labbox-odd-data "$R/data"
mkdir "$R/data/inner" && mount -t tmpfs labbox-odd-inner "$R/data/inner"
echo inner > "$R/data/inner/x"
mkdir "$R/sp ace
nl"
touch "$R/fileonly" "$R/.hostfile" && mount --bind "$R/file" "$R/fileonly"
mkdir "$R/old"
cd "$R"
pivot_root . old
umount -l /old
rmdir /old
cd /
exec /lbbin/labbox exec -- /bin/sh -c 'ls -A /; cat /file /fileonly /data/inner/x /absusr/bin/python3 >/dev/null && echo read-ok; /usr/bin/python3 -c "print(\"py-ok\")"'
'''


def test_unusual_top_level_entries_do_not_fail_setup(tmp_path):
    """A host whose / holds a fifo, a socket, a device node, dangling and absolute symlinks,
    an unreadable directory, mount points (a directory with a mount under it, a file) and odd
    names still runs experiments: what can be shown is, the rest is left out. Built in a
    mount namespace of the test's own with a root of its own: the host's / is not touched."""
    if not IS_ROOT:
        pytest.skip("a root of the test's own takes mounts and pivot_root: root's")
    if not shutil.which("pivot_root") or not shutil.which("unshare"):
        pytest.skip("util-linux's unshare and pivot_root are needed")
    root = tmp_path / "root"
    root.mkdir()
    script = write(tmp_path / "script", "")
    (script / "odd.sh").write_text(ODD_ROOT)
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", script / "odd.sh",
                        root, os.path.realpath(LABBOX)], capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    entries = p.stdout.splitlines()
    for name in ("file", "fileonly", ".hostfile", "dangling", "absusr", "locked", "data",
                 "sp ace", "usr", "bin", "proc", "dev", "sys", "tmp"):
        assert name in entries, (name, entries)
    for name in ("fifo", "sock", "nullnode"):
        assert name not in entries, (name, entries)
    assert "read-ok" in entries and "py-ok" in entries, p.stdout + p.stderr
def test_integers_past_64_bits_are_recorded_as_the_number_written(tmp_path):
    """results.json may hold integers no 64-bit type holds (a count, a seed, a hash someone
    wrote as a number). The record must keep the number the experiment wrote (as the nearest
    double, as Python's float() reads it), never a saturated 2**64-1 or -2**63 it did not."""
    exp = tmp_path / "exp"
    exp.mkdir()
    big, neg = 123456789012345678901234567890, -98765432109876543210987654321
    (exp / "main.py").write_text(
        "open('results.json', 'w').write('{\"big\": %d, \"neg\": %d, \"fits\": %d, \"e\": 5e3}')\n"
        % (big, neg, 2 ** 63 + 5))
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    got = r.result["metrics"]["files"]["results.json"]
    assert float(got["big"]) == float(big) and float(got["neg"]) == float(neg), (
        f"results.json said big={big}, neg={neg}; result.json records {got}")
    assert got["fits"] == 2 ** 63 + 5 and got["e"] == 5000
    on_disk = json.loads((run_dirs(tmp_path / "runs")[0] / "result.json").read_text())
    assert on_disk["metrics"]["files"]["results.json"] == got


@pytest.mark.parametrize("link", [".labbox", ".labbox/runs", ".labbox/labbox.db",
                                  ".labbox/sweeps"])
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_records_link_shipped_with_the_experiment_is_not_followed(tmp_path, link, command):
    """`cd exp && labbox run .` keeps the records in exp/.labbox: a .labbox (or runs, index,
    sweeps) link that came with the experiment put the run directories, their staged code
    and the index wherever it pointed, any directory the user can write."""
    victim = tmp_path / "victim"
    victim.mkdir()
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("print('accuracy: 1')\n")
    (exp / link).parent.mkdir(parents=True, exist_ok=True)
    target = victim / "labbox.db" if link.endswith(".db") else victim
    os.symlink(target, exp / link)
    cmd = [LABBOX, command, "--python", PYTHON]
    if command == "sweep":
        cmd += ["--param", "lr=1", "--seeds", "0"]
    p = subprocess.run(cmd + ["."], cwd=exp, capture_output=True, text=True,
                       timeout=CALL_TIMEOUT)
    assert list(victim.iterdir()) == [], (
        f"labbox wrote through {link}: {sorted(x.name for x in victim.iterdir())}")
    assert p.returncode == 2 and "symbolic link" in p.stderr, (p.returncode, p.stderr[-1500:])


def test_a_record_this_user_did_not_write_is_not_repeated_with_its_grants(tmp_path):
    """A run directory and index that came with an experiment (a committed .labbox/, made by
    someone else's labbox with `-v HOST:/host:rw` and `--network loopback`) are the user's
    files like any other. `labbox rerun` of such a run must not repeat its mounts and network
    without being told: it is refused (exit 2), naming what it would grant, and the host
    directory stays untouched; --accept-grants repeats it. The user's own run with the same
    grants carries the seal of the user's key and is repeated as before."""
    host = tmp_path / "host"
    host.mkdir()
    os.chmod(host, 0o777)
    marker = host / "written-by-the-rerun"
    exp = write(tmp_path / "exp", f"""\
import os, sys
if os.path.exists("/host/armed"):
    open("/host/{marker.name}", "w").write("x")
print("accuracy: 0.5")
""")
    other = user_dirs(tmp_path / "other-cache")
    mine = user_dirs(tmp_path / "my-cache")
    grants = ("-v", f"{host}:/host:rw", "--network", "loopback")
    p, doc = run("run", "--json", "--python", PYTHON, "--policy", "permissive", *grants, ".",
                 env=other, cwd=exp)
    assert p.returncode == 0 and doc["status"] == "completed", p.stderr
    forged = doc["id"]
    (host / "armed").write_text("1")
    os.chmod(host / "armed", 0o644)

    p, show = run("runs", "show", "--json", forged, env=mine, cwd=exp)
    assert p.returncode == 0 and show["record_sealed"] is False, p.stderr
    p, doc = run("rerun", "--json", forged, env=mine, cwd=exp)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert doc["schema"] == "labbox.error/1", doc
    msg = doc["error"]["message"]
    assert f"-v {host}:/host:rw" in msg and "--network loopback" in msg, msg
    assert "--accept-grants" in msg, msg
    assert not marker.exists()
    assert len(run_dirs(exp / ".labbox" / "runs")) == 1  # nothing ran

    p, doc = run("rerun", "--json", "--accept-grants", forged, env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    assert doc["rerun"]["record_sealed"] is False and marker.exists(), doc["rerun"]
    marker.unlink()

    # The user's own run, with the same grants, is sealed and repeated without asking.
    p, doc = run("run", "--json", "--python", PYTHON, "--policy", "permissive", *grants, ".",
                 env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    marker.unlink()
    p, show = run("runs", "show", "--json", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 0 and show["record_sealed"] is True, p.stderr
    p, again = run("rerun", "--json", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    assert again["rerun"]["record_sealed"] is True and marker.exists(), again["rerun"]
    # A sealed manifest changed afterwards is no longer the user's record.
    marker.unlink()
    man = Path(doc["run_dir"]) / "manifest.json"
    m = json.loads(man.read_text())
    m["config"]["sandbox"]["volumes"].append("/:/hostroot:ro")
    man.write_text(json.dumps(m, indent=2))
    p, err = run("rerun", "--json", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 2 and "-v /:/hostroot:ro" in err["error"]["message"], (p.stdout, p.stderr)
    assert not marker.exists()


@pytest.mark.parametrize("key,value,named", [
    ("disk_limit_bytes", 0, "--disk-limit 0"),
    ("grace_s", 1e9, "--grace 1e+09"),
    ("log_limit_bytes", 10**15, "--log-limit 1000000000000000"),
    ("shm_size_bytes", 64 << 30, f"--shm-size {64 << 30}"),
])
def test_a_record_this_user_did_not_write_is_not_repeated_with_looser_limits(tmp_path, key,
                                                                              value, named):
    """A record's limits are less containment when they are looser than a plain run's: no
    disk limit, a grace that never kills an experiment ignoring SIGTERM, an unbounded
    run.log. A record this user's labbox did not seal (one committed with an experiment, or
    edited) asking for one is refused naming it, as a mount would be; --accept-grants
    repeats it, with the limit it asked for."""
    exp = write(tmp_path / "exp", 'print("accuracy: 0.5")\n')
    p, doc = run("run", "--json", "--python", PYTHON, ".", cwd=exp)
    assert p.returncode == 0 and doc["status"] == "completed", p.stderr
    man = Path(doc["run_dir"]) / "manifest.json"
    m = json.loads(man.read_text())
    where = m["config"] if key == "log_limit_bytes" else m["config"]["sandbox"]
    where[key] = value
    man.write_text(json.dumps(m))
    p, err = run("rerun", "--json", doc["id"], cwd=exp)
    assert p.returncode == 2, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    msg = err["error"]["message"]
    assert named in msg and "--accept-grants" in msg, msg
    assert len(run_dirs(exp / ".labbox" / "runs")) == 1  # nothing ran
    p, again = run("rerun", "--json", "--accept-grants", doc["id"], cwd=exp)
    assert p.returncode == 0, (p.stdout[-1500:], p.stderr[-1500:])
    m2 = json.loads((Path(again["run_dir"]) / "manifest.json").read_text())
    where2 = m2["config"] if key == "log_limit_bytes" else m2["config"]["sandbox"]
    assert where2[key] == value, where2


def test_a_sweep_this_user_did_not_write_is_not_resumed_with_its_grants(tmp_path):
    """`labbox sweep --resume ID` runs what the sweep's sweep.json says (experiment, flags,
    mounts). One that came with an experiment, made by another labbox with a writable host
    mount, or the user's own edited afterwards, is refused (exit 2) naming the grant, and no
    cell runs; --accept-grants resumes it."""
    host = tmp_path / "host"
    host.mkdir()
    os.chmod(host, 0o777)
    exp = write(tmp_path / "exp", """\
import argparse, os
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); a = p.parse_args()
open(f"/host/cell-{a.seed}", "w").write("x")
print("accuracy: 0.5")
""")
    other = user_dirs(tmp_path / "other-cache")
    mine = user_dirs(tmp_path / "my-cache")
    runs = exp / ".labbox" / "runs"
    p, doc = run("sweep", "--json", "--plan-only", "--python", PYTHON, "--policy", "permissive",
                 "-v", f"{host}:/host:rw", "--seeds", "0-1", ".", env=other, cwd=exp)
    assert p.returncode == 0, p.stderr
    sid = doc["id"]
    p, err = run("sweep", "--json", "--resume", sid, env=mine, cwd=exp)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert f"-v {host}:/host:rw" in err["error"]["message"], err
    assert "--accept-grants" in err["error"]["message"], err
    assert list(host.iterdir()) == [] and run_dirs(runs) == []
    p, doc = run("sweep", "--json", "--resume", sid, "--accept-grants", env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in host.iterdir()) == ["cell-0", "cell-1"]

    # The user's own sweep, sealed, resumes without asking; edited, it asks again.
    for x in host.iterdir():
        x.unlink()
    p, doc = run("sweep", "--json", "--plan-only", "--python", PYTHON, "--policy", "permissive",
                 "--seeds", "0-1", ".", env=mine, cwd=exp)
    assert p.returncode == 0, p.stderr
    sweep_json = Path(doc["sweep_dir"]) / "sweep.json"
    d = json.loads(sweep_json.read_text())
    d["invocation"]["sandbox"]["volumes"] = [f"{host}:/host:rw"]
    sweep_json.write_text(json.dumps(d, indent=2))
    p, err = run("sweep", "--json", "--resume", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 2 and f"-v {host}:/host:rw" in err["error"]["message"], p.stderr
    assert list(host.iterdir()) == []


def test_an_edited_sweep_is_not_resumed_with_looser_limits(tmp_path):
    """sweep --resume runs every cell with its sweep.json's limits: one edited to have no
    disk limit and a grace of 1e9 s asks first, naming both, and runs no cell."""
    exp = write(tmp_path / "exp", 'print("accuracy: 0.5")\n')
    p, doc = run("sweep", "--json", "--plan-only", "--python", PYTHON, "--seeds", "0-1", ".",
                 cwd=exp)
    assert p.returncode == 0, p.stderr
    sweep_json = Path(doc["sweep_dir"]) / "sweep.json"
    d = json.loads(sweep_json.read_text())
    d["invocation"]["sandbox"]["disk_limit_bytes"] = 0
    d["invocation"]["sandbox"]["grace_s"] = 1e9
    sweep_json.write_text(json.dumps(d, indent=2))
    p, err = run("sweep", "--json", "--resume", doc["id"], cwd=exp)
    assert p.returncode == 2, (p.stdout[-1500:], p.stderr[-1500:])
    msg = err["error"]["message"]
    assert "--disk-limit 0" in msg and "--grace 1e+09" in msg and "--accept-grants" in msg, msg
    assert run_dirs(exp / ".labbox" / "runs") == []


def test_a_record_naming_a_host_interpreter_is_not_probed_unasked(tmp_path):
    """An interpreter path is probed on the host (it is the user's own when given with
    --python). A record that came from elsewhere names one as it likes: a rerun of it, or a
    resume of such a sweep, is refused naming the path, and nothing runs on the host."""
    marker = tmp_path / "probed-on-the-host"
    evil = tmp_path / "bin" / "python3"
    evil.parent.mkdir()
    evil.write_text(f"#!/bin/sh\necho x >> {marker}\nexec {PYTHON} \"$@\"\n")
    evil.chmod(0o755)
    exp = write(tmp_path / "exp", "print('accuracy: 0.5')\n")
    other = user_dirs(tmp_path / "other-cache")
    mine = user_dirs(tmp_path / "my-cache")
    p, doc = run("run", "--json", "--python", evil, ".", env=other, cwd=exp)
    assert p.returncode == 0, p.stderr
    p, plan = run("sweep", "--json", "--plan-only", "--python", evil, "--seeds", "0-1", ".",
                  env=other, cwd=exp)
    assert p.returncode == 0, p.stderr
    marker.unlink()
    # The manifest records what the interpreter said it was; a forged one names the script.
    man = Path(doc["run_dir"]) / "manifest.json"
    m = json.loads(man.read_text())
    m["interpreter"]["path"] = str(evil)
    man.write_text(json.dumps(m, indent=2))

    p, err = run("rerun", "--json", doc["id"], env=mine, cwd=exp)
    assert p.returncode == 2 and f"--python {evil}" in err["error"]["message"], (p.stdout, p.stderr)
    p, err = run("sweep", "--json", "--resume", plan["id"], env=mine, cwd=exp)
    assert p.returncode == 2 and f"--python {evil}" in err["error"]["message"], (p.stdout, p.stderr)
    assert not marker.exists()
