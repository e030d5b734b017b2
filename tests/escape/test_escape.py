"""The hostile-experiment corpus: each test stages one attack from corpus/, runs it through
`labbox run`, and checks from the host's side that it was contained, and that the verdict
(status, exit code, failure class and exception) names what happened.

Where it can, a test also runs a positive control: the same attack with the protection
taken away (--network host, or the script run directly by the host's Python as the identity
the experiment has inside), which shows that the attack works and that the host-side check
would see it succeed.

Runs as root and as an ordinary user (tests/escape/run-as-user); against build/labbox or any
binary named by LABBOX_BIN (the sanitizer build: build-san/labbox).
"""
import ctypes
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from escape_lib import (DENIED, POLICY, GiB, HOME, IS_ROOT, LABBOX, MiB, PAYLOAD_UID, PYTHON, X86_64,
                        Canary, LiveRun, assert_completed, assert_enforced_by,
                        assert_failed_with, assert_one_namespace_each, disk_limit_opts, free_bytes,
                        host_can_enforce, ipv6_loopback, is_asan_build, libc, log_has,
                        reachable_by_others, read_all_nonblocking, report, run_dirs, run_exp,
                        run_survivors, run_unsandboxed, secret_free, sha256_file, stage,
                        token, tree_digest, unique, wait_for)

NET_MODES = ["none", "loopback", "host"]


def results_of(rep):
    return rep.get("results", {})


def failed_attempts(rep, *names):
    """Attempts (all, or NAMES) that succeeded although they must have been refused."""
    res = results_of(rep)
    names = names or tuple(res)
    return {n: res[n] for n in names if res.get(n, {}).get("ok")}


# === network ===================================================================================

@pytest.mark.parametrize("mode", NET_MODES)
@pytest.mark.parametrize("proto,host", [("tcp", "127.0.0.1"), ("tcp", "::1"),
                                        ("udp", "127.0.0.1"), ("udp", "::1")],
                         ids=["tcp4", "tcp6", "udp4", "udp6"])
def test_host_loopback_server(tmp_path, proto, host, mode):
    """A server on the host's loopback is out of reach: no socket at all by default, a private
    loopback with --network loopback. --network host is the positive control."""
    if ":" in host and not ipv6_loopback():
        pytest.skip("no IPv6 loopback on this host")
    tag = unique("net")
    canary = Canary(proto, host)
    try:
        exp = stage(tmp_path, "net_connect",
                    {"proto": proto, "host": host, "port": canary.port, "tag": tag})
        r = run_exp(exp, tmp_path / "runs", "--network", mode)
        time.sleep(0.3)
        reached = list(canary.events)
    finally:
        canary.close()
    if mode == "host":
        assert reached, f"positive control: with --network host the experiment did not reach " \
                        f"the {proto} server on {host}\n{r.why()}"
        assert_completed(r)
        return
    assert not reached, f"the experiment reached the host's {proto} server on {host} with " \
                        f"--network {mode}: {reached}"
    if mode == "none":
        assert_failed_with(r, **DENIED)
    else:
        assert_failed_with(r, exception="ConnectionRefusedError", classes=("network",))
    assert r.result["isolation"]["network"] == mode, r.why()


@pytest.mark.parametrize("mode", NET_MODES)
def test_dns_resolution(tmp_path, mode):
    """Name resolution, through the C library (resolv.conf names a server on the host's
    loopback; on port 53 where the test may bind it) and by hand-made queries."""
    tag = unique("dns")
    name = f"{tag}.labbox-escape.example"
    udp, tcp = Canary("udp"), Canary("tcp")
    try:
        port53 = Canary("udp", port=53)
    except OSError:
        port53 = None
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
    os.chmod(resolv, 0o644)
    try:
        exp = stage(tmp_path, "dns", {"name": name, "port": udp.port, "tcp_port": tcp.port})
        r = run_exp(exp, tmp_path / "runs", "--network", mode,
                    "-v", f"{resolv}:/etc/resolv.conf:ro")
        time.sleep(0.3)
    finally:
        for c in (udp, tcp, port53):
            if c:
                c.close()
    queries = [d for c in (udp, port53) if c for _, d in c.events if tag.encode() in d]
    if mode == "host":
        assert [d for _, d in udp.events if tag.encode() in d], "positive control: no query"
        assert tcp.events, "positive control: no TCP query"
        if port53:
            assert [d for _, d in port53.events if tag.encode() in d], \
                "positive control: the C library's query did not reach 127.0.0.1:53"
    else:
        assert not queries and not tcp.events, \
            f"DNS queries reached the host with --network {mode}: {queries} {tcp.events}"
    # our canary answers nonsense, so resolution fails in every mode: a network failure
    assert_failed_with(r, exception="gaierror", classes=("network",))


@pytest.mark.parametrize("mode", ["none", "loopback"])
def test_raw_packet_and_ping_sockets(tmp_path, mode):
    tag = unique("raw")
    sniffer = None
    if IS_ROOT:
        sniffer = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        sniffer.setblocking(False)
    try:
        exp = stage(tmp_path, "raw_sockets", {"tag": tag})
        r = run_exp(exp, tmp_path / "runs", "--network", mode)
        seen = read_all_nonblocking(sniffer.fileno()) if sniffer else b""
        if sniffer:
            # positive control: the same packets sent by the host's root reach the sniffer
            p, rep = run_unsandboxed(exp, tmp_path, as_payload=False)
            ctl = read_all_nonblocking(sniffer.fileno())
            assert results_of(rep).get("raw_ipv4", {}).get("ok") and tag.encode() in ctl, \
                f"positive control failed: {rep} {p.stderr[-500:]}"
    finally:
        if sniffer:
            sniffer.close()
    assert tag.encode() not in seen, "an ICMP packet of the experiment reached the host"
    rep = report(r)
    assert not failed_attempts(rep), f"raw/packet/ping sockets were created: {failed_attempts(rep)}"
    assert_failed_with(r, **DENIED)


@pytest.mark.parametrize("mode", ["none", "loopback"])
def test_netlink_shows_no_host_network(tmp_path, mode):
    """rtnetlink and sock_diag list interfaces and sockets: in the sandbox, never the host's."""
    canary = Canary("tcp", "127.0.0.1")
    host_ifaces = {n for _, n in socket.if_nameindex()} - {"lo"}
    try:
        exp = stage(tmp_path, "netlink", {"reraise": mode == "none"})
        r = run_exp(exp, tmp_path / "runs", "--network", mode)
        p, ctl = run_unsandboxed(exp, tmp_path)
    finally:
        canary.close()
    # positive control: the same code on the host sees the canary's port and the interfaces
    cres = results_of(ctl)
    assert canary.port in (cres.get("sock_diag_tcp4", {}).get("value") or []), \
        f"positive control: sock_diag did not list the host's listening port: {cres}"
    assert "lo" in (cres.get("rtnetlink_links", {}).get("value") or []), cres
    rep = results_of(report(r))
    ports = (rep.get("sock_diag_tcp4", {}).get("value") or []) + \
            (rep.get("sock_diag_tcp6", {}).get("value") or [])
    links = rep.get("rtnetlink_links", {}).get("value") or []
    assert canary.port not in ports, f"the experiment listed the host's TCP port {canary.port}"
    assert not set(links) & host_ifaces, f"the experiment saw the host's interfaces: {links}"
    if mode == "none":
        assert not failed_attempts(report(r)), report(r)
        assert_failed_with(r, **DENIED)
    else:
        assert links == ["lo"], rep
        assert r.rc in (0, 1) and r.result["status"] in ("completed", "failed"), r.why()


def test_host_unix_sockets(tmp_path):
    """Unix sockets of host daemons: files in the hidden home and /run, and an abstract name
    (scoped by the network namespace). A socket in a directory mounted into the sandbox with
    -v is the positive control: it is reachable, so the detector works."""
    tag = unique("unix")
    hidden = [HOME / f".lbx-{tag}.sock"]
    if IS_ROOT and os.path.isdir("/run"):
        hidden.append(Path("/run") / f"lbx-{tag}.sock")
    vis_dir = tmp_path / "visible"
    vis_dir.mkdir()
    os.chmod(vis_dir, 0o755)
    os.chmod(tmp_path, 0o755)
    canaries = []
    try:
        for p in hidden + [vis_dir / "ctl.sock"]:
            canaries.append(Canary("unix", path=str(p)))
            os.chmod(p, 0o777)  # only hiding protects them
        abstract = Canary("unix", path="\0" + f"lbx-{tag}")
        exp = stage(tmp_path, "unix_socket",
                    {"tag": tag, "paths": [str(p) for p in hidden] + [f"/tmp/lbx-vis-{tag}/ctl.sock"],
                     "abstract": f"lbx-{tag}"})
        r = run_exp(exp, tmp_path / "runs", "-v", f"{vis_dir}:/tmp/lbx-vis-{tag}:ro")
        time.sleep(0.3)
    finally:
        for c in canaries:
            c.close()
        for p in hidden:
            if p.exists():
                p.unlink()
        if "abstract" in locals():
            abstract.close()
    for p, c in zip(hidden, canaries):
        assert not c.events, f"the experiment connected to the host's socket {p}"
    assert not abstract.events, "the experiment connected to the host's abstract socket"
    assert canaries[-1].events, f"positive control: the -v mounted socket was not reached\n{r.why()}"
    assert_failed_with(r, exception="FileNotFoundError", classes=("missing_data",))


def test_host_socket_tables(tmp_path):
    """/proc/net of the sandbox lists its own sockets, never the host's services."""
    tag = unique("pnet")
    canary = Canary("tcp", "127.0.0.1")
    abstract = Canary("unix", path="\0" + f"lbx-{tag}")
    try:
        exp = stage(tmp_path, "proc_net", {})
        r = run_exp(exp, tmp_path / "runs")
        p, _ = run_unsandboxed(exp, tmp_path)
    finally:
        canary.close()
        abstract.close()
    needle = ":%04X " % canary.port
    ctl = (p.work / "proc_net.txt").read_text()
    assert needle in ctl and tag in ctl, "positive control: /proc/net on the host shows neither"
    inside = (r.exp / "proc_net.txt").read_text()
    assert needle not in inside, f"the experiment saw the host's TCP port {canary.port}"
    assert tag not in inside, "the experiment saw the host's abstract unix socket"
    assert_completed(r)


@pytest.mark.skipif(not X86_64, reason="the i386 and x32 system call tables are x86_64's")
def test_other_syscall_abis(tmp_path):
    """The same denied calls through the i386 (int 0x80) and x32 tables; a TCP connection to
    the host's loopback made entirely with i386 calls."""
    tag = unique("abi")
    canary = Canary("tcp", "127.0.0.1")
    try:
        exp = stage(tmp_path, "foreign_arch", {"port": canary.port, "tag": tag})
        r = run_exp(exp, tmp_path / "runs")
        time.sleep(0.3)
        reached = list(canary.events)
        canary.events.clear()
        p, ctl = run_unsandboxed(exp, tmp_path)
        time.sleep(0.3)
        ctl_reached = list(canary.events)
    finally:
        canary.close()
    assert not reached, f"the experiment reached the host through the i386 table: {reached}"
    res = results_of(report(r))
    if results_of(ctl).get("i386_getpid", {}).get("ok"):
        assert ctl_reached, f"positive control: i386 socket+connect on the host did not connect: {ctl}"
    # labbox refuses every call through another ABI with ENOSYS (its rules are written for the
    # native table): getpid included. Refused is what matters; EPERM would do as well.
    wrong = {n: v for n, v in res.items() if v.get("errname") not in ("EPERM", "ENOSYS")}
    assert not wrong, f"calls through another ABI were not refused: {wrong}"
    assert r.result["status"] == "failed", r.why()


# === file system: writes ========================================================================

@pytest.mark.parametrize("d", ["/tmp", "/var/tmp", "/dev/shm"])
def test_private_dir_does_not_reach_host(tmp_path, d):
    tag = unique("priv")
    secret = token()
    hostfile = Path(d) / tag
    newfile = Path(d) / (tag + "-new")
    hostfile.write_text(secret)
    os.chmod(hostfile, 0o666)  # only the private mount protects it
    shm = None
    params = {"dir": d, "hostfile": str(hostfile), "newfile": str(newfile)}
    try:
        if d == "/dev/shm":
            from multiprocessing import resource_tracker, shared_memory
            shm = shared_memory.SharedMemory(name=tag + "-shm", create=True, size=4096)
            resource_tracker.unregister(shm._name, "shared_memory")
            shm.buf[:len(secret)] = secret.encode()
            os.chmod(f"/dev/shm/{tag}-shm", 0o666)
            params["shm_name"] = tag + "-shm"
        exp = stage(tmp_path, "private_dirs", params)
        r = run_exp(exp, tmp_path / "runs")
        assert hostfile.read_text() == secret, f"the experiment changed the host's {hostfile}"
        assert not newfile.exists(), f"the experiment created {newfile} on the host"
        if shm:
            assert bytes(shm.buf[:len(secret)]) == secret.encode(), "host shared memory changed"
    finally:
        for p in (hostfile, newfile):
            if p.exists():
                p.unlink()
        if shm:
            shm.close()
            shm.unlink()
    secret_free(r, secret)
    rep = results_of(report(r))
    assert rep["create_new_file"]["ok"], f"{d} is not writable inside (it should be private): {rep}"
    assert_failed_with(r, exception="FileNotFoundError", classes=("missing_data",))


def test_home_is_not_writable(tmp_path):
    tag = unique("home")
    existing = HOME / f".lbx-{tag}-profile"
    existing.write_text("original\n")
    os.chmod(existing, 0o666)
    planted = [HOME / ".ssh" / f"authorized_keys-{tag}",
               HOME / ".config" / "autostart" / f"{tag}.desktop", HOME / f"{tag}.txt",
               HOME / f"{tag}-dir"]
    pre = {p: p.exists() for p in (HOME / ".ssh", HOME / ".config", HOME / ".config" / "autostart")}
    try:
        exp = stage(tmp_path, "home_write", {"home": str(HOME), "existing": str(existing), "tag": tag})
        r = run_exp(exp, tmp_path / "runs")
        assert existing.read_text() == "original\n", "the experiment changed a file in the home"
        for p in planted:
            assert not p.exists(), f"the experiment created {p}"
    finally:
        existing.unlink()
        for p in planted:
            if p.is_dir():
                p.rmdir()
            elif p.exists():
                p.unlink()
        for p, was in sorted(pre.items(), key=lambda kv: -len(str(kv[0]))):
            if not was and p.is_dir() and not any(p.iterdir()):
                p.rmdir()
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, exception=("OSError", "PermissionError", "FileNotFoundError"),
                       classes=("sandbox_restriction", "missing_data"))


def test_labbox_binary_cannot_be_replaced(tmp_path):
    before = (sha256_file(LABBOX), os.stat(LABBOX))
    exp = stage(tmp_path, "labbox_binary", {"labbox": LABBOX})
    r = run_exp(exp, tmp_path / "runs")
    st = os.stat(LABBOX)
    assert sha256_file(LABBOX) == before[0], "the labbox binary was modified"
    assert (st.st_ino, st.st_mode, st.st_mtime_ns) == \
           (before[1].st_ino, before[1].st_mode, before[1].st_mtime_ns), "labbox binary replaced"
    assert not os.path.exists(LABBOX + ".old")
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, exception=("OSError", "PermissionError", "FileNotFoundError"),
                       classes=("sandbox_restriction", "missing_data"))


@pytest.mark.parametrize("where", ["hidden", "visible"])
def test_run_directory_outside_exp(tmp_path, where, request):
    """labbox's own records around exp/ (result.json, run.log, manifest.json...) and a sibling
    run stay as labbox wrote them. 'visible': a runs directory the sandbox sees read-only;
    'hidden': one under /tmp, which the sandbox replaces with its private /tmp."""
    base = request.getfixturevalue("visible_dir") if where == "visible" else tmp_path
    runs = base / "runs"
    sib_exp = stage(tmp_path, "symlink_results", {"links": {}}, name="sibling")
    (sib_exp / "results.json").write_text('{"v": 1}')
    sib = run_exp(sib_exp, runs)
    assert sib.rc == 0, sib.why()
    sib_digest = tree_digest(sib.run_dir)
    tag = unique("rundir")
    ink = tag[::-1]
    exp = stage(tmp_path, "run_dir", {"tag": tag, "siblings": [
        str(sib.run_dir / "result.json"), str(sib.run_dir / "run.log"),
        str(sib.exp / "results.json")]})
    r = run_exp(exp, runs)
    rd = r.run_dir
    assert sorted(os.listdir(rd)) == sorted(
        ["exp", "run.log", "result.json", "manifest.json", "environment.txt"]), os.listdir(rd)
    for name in ("result.json", "run.log", "manifest.json", "environment.txt"):
        assert ink not in (rd / name).read_text(errors="replace"), f"the experiment wrote into {name}"
    assert json.loads((rd / "result.json").read_text())["id"] == r.result["id"]
    assert not [p for p in runs.iterdir() if tag in p.name], list(runs.iterdir())
    assert not os.stat(rd).st_mode & 0o002, "the run directory became world-writable"
    assert tree_digest(sib.run_dir) == sib_digest, "the experiment changed a sibling run"
    if where == "visible":
        assert not failed_attempts(report(r), "write_result.json", "write_run.log",
                                   "create_in_run_dir", "rename_exp", "sibling0", "sibling2")
        assert_failed_with(r, exception=("OSError", "PermissionError"),
                           classes=("sandbox_restriction",))
    else:
        # writes that landed in the private /tmp are harmless; renaming exp/ never works
        assert_failed_with(r, exception=("OSError", "PermissionError"),
                           classes=("sandbox_restriction", "code_error"))


def test_no_writable_host_directory(tmp_path):
    """A breadth-first walk of everything visible, creating a file in every directory: none of
    those files may exist on the host afterwards, except in the run's own exp/."""
    tag = unique("scan")
    exp = stage(tmp_path, "write_scan", {"tag": tag, "max_dirs": 60000})
    r = run_exp(exp, tmp_path / "runs", timeout=300)
    scan = json.loads((r.exp / "scan.json").read_text())
    leaked = []
    for d in scan["tried"]:
        p = os.path.join(d, tag)
        if os.path.lexists(p) and not p.startswith(str(r.exp) + "/"):
            leaked.append(p)
    for p in leaked:
        try:
            os.unlink(p)
        except OSError:
            pass
    assert not leaked, f"the experiment created files on the host: {leaked[:20]}"
    assert len(scan["tried"]) > 1000, len(scan["tried"])
    assert str(r.exp) in scan["wrote"], "the scan never reached exp/ (the walk is too short)"
    assert_completed(r)


def test_hardlinks_to_host_files(tmp_path):
    """exp/ outlives the run on the host: a hard link there to a host file would hand that
    file to whoever owns exp/ (and to labbox's later processing of exp/)."""
    canary = HOME / f".lbx-{unique('hl')}"
    canary.write_text("x")
    targets = [t for t in ("/etc/shadow", "/etc/passwd", LABBOX, os.path.realpath(PYTHON),
                           str(canary)) if os.path.exists(t)]
    before = {t: os.stat(t) for t in targets}
    try:
        exp = stage(tmp_path, "hardlinks", {"targets": targets})
        r = run_exp(exp, tmp_path / "runs")
        after = {t: os.stat(t) for t in targets}
    finally:
        canary.unlink()
    for t in targets:
        assert after[t].st_nlink == before[t].st_nlink, f"{t} got a new hard link"
    inodes = {(s.st_dev, s.st_ino) for s in before.values()}
    for dirpath, _, files in os.walk(r.run_dir):
        for f in files:
            s = os.lstat(os.path.join(dirpath, f))
            assert (s.st_dev, s.st_ino) not in inodes, f"{f} in the run directory is a host file"
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, exception=("OSError", "PermissionError", "FileNotFoundError"))
    assert re.search(r"cross-device|not permitted|No such file|Permission denied",
                     json.dumps(r.result["failure"])), r.why()


def test_no_setuid_program_left_for_other_users(tmp_path, public_dir):
    """exp/ stays on the host after the run. A set-user-ID (or set-group-ID) program the
    experiment leaves there, in a run directory other users can reach (a project under /home
    or /work usually is), lets any of them run code as the experiment's owner: the invoking
    user, or nobody when labbox runs as root."""
    runs = public_dir / "runs"
    exp = stage(tmp_path, "setuid_plant", {"binary": os.path.realpath(PYTHON)})
    r = run_exp(exp, runs)
    offenders = []
    for dirpath, dirnames, files in os.walk(r.run_dir):
        for n in files + dirnames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID) \
                    and st.st_mode & stat.S_IXOTH and reachable_by_others(p):
                offenders.append(f"{p} mode {oct(st.st_mode)} uid {st.st_uid} gid {st.st_gid}")
    assert not offenders, ("set-user-ID/set-group-ID programs planted by the experiment remain "
                           "on the host, executable by every user: " + "; ".join(offenders))
    # Either the sandbox refused the set-ID bits (seccomp: EPERM) or they are gone afterwards;
    # what must not happen is a set-ID program left in the run directory.
    attempts = report(r).get("results", {})
    refused = [n for n, v in attempts.items() if v.get("errname") == "EPERM"]
    assert refused or r.rc == 0, r.why()


def test_device_nodes(tmp_path):
    dev = os.stat("/").st_dev
    disk_path = "/dev/vda"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        f = line.split()
        if f[4] == "/" and "-" in f:
            disk_path = f[f.index("-") + 2]
            break
    exp = stage(tmp_path, "device_nodes", {"disk": [os.major(dev), os.minor(dev)],
                                           "disk_path": disk_path})
    r = run_exp(exp, tmp_path / "runs")
    for dirpath, _, files in os.walk(r.run_dir):
        for f in files:
            m = os.lstat(os.path.join(dirpath, f)).st_mode
            assert not (stat.S_ISBLK(m) or stat.S_ISCHR(m)), f"device node {f} left in the run"
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)


def test_kernel_knobs_unchanged(tmp_path):
    tag = unique("knob")
    knobs = ["/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
             "/sys/kernel/uevent_helper", "/proc/sys/kernel/hostname"] + \
        sorted(glob.glob("/sys/fs/cgroup/*/release_agent")) + \
        sorted(glob.glob("/sys/fs/cgroup/*/notify_on_release"))
    before = {}
    for k in knobs:
        try:
            before[k] = Path(k).read_text()
        except OSError:
            pass
    exp = stage(tmp_path, "kernel_knobs", {"evil": f"/tmp/lbx-{tag}-evil"})
    r = run_exp(exp, tmp_path / "runs")
    changed = {}
    for k, v in before.items():
        now = Path(k).read_text()
        if now != v:
            changed[k] = now
            if IS_ROOT:
                Path(k).write_text(v)  # put the host back before failing
    assert not changed, f"the experiment changed the host's kernel settings: {changed}"
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, exception=("PermissionError", "OSError"), classes=("sandbox_restriction",))


def test_cgroup_escape_then_allocate(tmp_path):
    """Joining the root cgroup or raising its own limit, then allocating twice the limit: the
    limit holds (an OOM kill under a cgroup; MemoryError under the accepted rlimit fallback)."""
    limit = 256 * MiB
    exp = stage(tmp_path, "cgroup_escape", {"alloc_mb": 512})
    lr = LiveRun(exp, tmp_path / "runs", "--memory", "256m",
                 *(["--allow-degraded", "memory"] if not host_can_enforce("memory") else []))
    r = lr.wait()
    assert_enforced_by(r, "memory_enforced_by", "memory")
    assert "allocated_mb" not in r.result["metrics"]["values"], "the memory limit was escaped"
    if host_can_enforce("memory"):
        assert lr.peak_rss_sum_kb * 1024 <= limit + 48 * MiB, lr.peak_rss_sum_kb
        assert r.rc == 137 and r.result["status"] == "oom", r.why()
    else:
        assert max(lr.hwm.values() or [0]) * 1024 <= limit + 48 * MiB, lr.hwm
        assert_failed_with(r, exception="MemoryError", classes=("oom",))
    assert not failed_attempts(report(r)) or r.rc == 137, report(r)


def test_hostname_and_clock(tmp_path):
    name = socket.gethostname()
    offset = time.time() - time.monotonic()
    exp = stage(tmp_path, "hostname_clock", {"name": unique("pwned")})
    r = run_exp(exp, tmp_path / "runs")
    assert socket.gethostname() == name, "the host's name changed"
    assert abs((time.time() - time.monotonic()) - offset) < 600, "the host's clock jumped"
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)


def test_sysv_ipc_is_private(tmp_path):
    """System V shared memory and message queues of the host (keys are global without an ipc
    namespace): the positive control, run directly on the host, reads both."""
    IPC_CREAT, IPC_RMID, IPC_NOWAIT = 0o1000, 0, 0o4000
    secret = token()
    key_shm, key_msg = [0x4c420000 + (os.getpid() * 2 + i) % 0xffff for i in (0, 1)]
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(ctypes.c_int(key_shm), ctypes.c_size_t(4096), IPC_CREAT | 0o666)
    msqid = libc.msgget(ctypes.c_int(key_msg), IPC_CREAT | 0o666)
    assert shmid >= 0 and msqid >= 0, ctypes.get_errno()
    addr = libc.shmat(shmid, None, 0)

    def reset():
        ctypes.memmove(addr, secret.encode(), len(secret))
        buf = ctypes.create_string_buffer(600)
        while libc.msgrcv(msqid, buf, ctypes.c_size_t(500), ctypes.c_long(0), IPC_NOWAIT) >= 0:
            pass
        msg = struct.pack("=q", 1) + secret.encode()
        assert libc.msgsnd(msqid, msg, ctypes.c_size_t(len(secret)), IPC_NOWAIT) == 0

    def queued():
        buf = ctypes.create_string_buffer(600)
        n = libc.msgrcv(msqid, buf, ctypes.c_size_t(500), ctypes.c_long(0), IPC_NOWAIT)
        return buf.raw[8:8 + n] if n >= 0 else b""
    try:
        reset()
        exp = stage(tmp_path, "sysv_ipc", {"shm_key": key_shm, "msg_key": key_msg})
        p, ctl = run_unsandboxed(exp, tmp_path)
        assert secret in json.dumps(ctl), f"positive control: the host's IPC was not readable: {ctl}"
        reset()
        r = run_exp(exp, tmp_path / "runs")
        assert ctypes.string_at(addr, len(secret)) == secret.encode(), "host shared memory changed"
        assert queued() == secret.encode(), "the host's message was taken from its queue"
    finally:
        libc.shmdt(ctypes.c_void_p(addr))
        libc.shmctl(shmid, IPC_RMID, None)
        libc.msgctl(msqid, IPC_RMID, None)
    secret_free(r, secret)
    assert_failed_with(r, exception="FileNotFoundError", classes=("missing_data", "code_error"))


# === secrets ====================================================================================

def home_canary(secret, name=None):
    d = HOME / (name or f".lbx-{unique('cred')}")
    d.mkdir()
    os.chmod(d, 0o755)
    c = d / "credentials"
    c.write_text(f"aws_secret_access_key = {secret}\n")
    os.chmod(c, 0o644)  # readable by anyone who can see it: only hiding protects it
    return d, c


def test_home_credential(tmp_path):
    secret = token()
    d, canary = home_canary(secret)
    try:
        exp = stage(tmp_path, "home_secret", {"canary": str(canary), "home": str(HOME)})
        r = run_exp(exp, tmp_path / "runs")
        p, ctl = run_unsandboxed(exp, tmp_path, as_payload=False)
    finally:
        shutil.rmtree(d)
    assert secret in json.dumps(ctl), f"positive control: the credential was not read: {ctl}"
    secret_free(r, secret)
    assert_failed_with(r, exception="FileNotFoundError", classes=("missing_data",))


def test_other_processes_environment(tmp_path, make_victim):
    """A host process's environment (by its pid), and labbox's own (inherited by the sandbox's
    init, which is a fork of labbox) through /proc/1/environ."""
    v = make_victim()
    mine = token()
    exp = stage(tmp_path, "proc_environ", {"victim_pid": v.pid})
    # labbox's own command line too: what it was told about the host (a --hide path, a
    # --repair-cmd with a key in it) is not the experiment's to read through /proc/1/cmdline
    hidden = tmp_path / ("hidden-" + token())
    hidden.mkdir()
    r = run_exp(exp, tmp_path / "runs", "--hide", str(hidden),
                env={**os.environ, "LBX_LABBOX_SECRET": mine})
    p, ctl = run_unsandboxed(exp, tmp_path)
    assert v.secret in json.dumps(ctl), f"positive control: the victim's environ was not read: {ctl}"
    assert v.alive()
    secret_free(r, v.secret, mine)
    init_cmdline = results_of(report(r)).get("init_cmdline", {})
    assert hidden.name not in json.dumps(init_cmdline), init_cmdline
    assert "--hide" not in json.dumps(init_cmdline), init_cmdline
    assert_failed_with(r, exception="FileNotFoundError", classes=("missing_data",))


def test_root_only_files(tmp_path):
    exp = stage(tmp_path, "root_files", {})
    r = run_exp(exp, tmp_path / "runs")
    secrets = []
    if IS_ROOT:
        for line in Path("/etc/shadow").read_text().splitlines():
            f = line.split(":")
            if len(f) > 1 and len(f[1]) > 3:
                secrets.append(f[1])
        for key in glob.glob("/etc/ssh/ssh_host_*_key"):
            secrets += [l for l in Path(key).read_text().splitlines() if len(l) > 40][:2]
    secret_free(r, *secrets)
    res = results_of(report(r))
    assert not res.get("shadow", {}).get("ok") and not res.get("kcore", {}).get("ok"), res
    assert_failed_with(r, **DENIED)


def test_keyring_secret(tmp_path):
    """A key in the session keyring labbox was started with (every child inherits it, and a
    possessor may read it whatever its uid): only the seccomp filter keeps it."""
    KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SETPERM, KEYCTL_INVALIDATE = 1, 5, 21
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(250, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        pytest.skip(f"no keyrings on this host (errno {ctypes.get_errno()})")
    secret = token()
    desc = unique("lbxkey")
    kid = libc.syscall(248, b"user", desc.encode(), secret.encode(), len(secret), ctypes.c_long(-3))
    if kid < 0:
        pytest.skip(f"add_key failed on the host (errno {ctypes.get_errno()})")
    libc.syscall(250, KEYCTL_SETPERM, ctypes.c_long(kid), 0x3f3f0000)
    try:
        exp = stage(tmp_path, "keyring", {"key_id": kid, "description": desc})
        p, ctl = run_unsandboxed(exp, tmp_path)
        assert secret in json.dumps(ctl), f"positive control: the key was not readable: {ctl}"
        r = run_exp(exp, tmp_path / "runs")
    finally:
        libc.syscall(250, KEYCTL_INVALIDATE, ctypes.c_long(kid))
    secret_free(r, secret)
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)


@pytest.mark.parametrize("target", ["proc_self_environ", "private_file", "relative_climb"])
def test_collected_names_as_symlinks(tmp_path, target):
    """results.json and final_info.json as symlinks to secrets that labbox itself could read:
    its own environment (/proc/self/environ is labbox's when labbox opens it), a file only the
    invoking user may read, and the same file by a relative path climbing out of exp/."""
    secret = token()
    private = tmp_path / "private.json"
    private.write_text(json.dumps({"stolen": secret}))
    os.chmod(private, 0o600)
    runs = tmp_path / "runs"
    runs.mkdir()
    link = {"proc_self_environ": "/proc/self/environ", "private_file": str(private),
            "relative_climb": "../" * 30 + str(private).lstrip("/")}[target]
    exp = stage(tmp_path, "symlink_results", {"links": {"results.json": link, "final_info.json": link}})
    r = run_exp(exp, runs, env={**os.environ, "LBX_SECRET": secret})
    secret_free(r, secret)
    assert r.result["metrics"]["values"].get("score") == 1, r.why()
    iss = [i for i in r.result["metric_issues"] if i.get("where") == "results.json"]
    assert iss and "symbolic link" in iss[0].get("message", ""), r.result["metric_issues"]
    assert r.rc in (0, 4), r.why()


def test_staged_symlinks_to_secrets(tmp_path):
    """The experiment directory itself carries symlinks to a credential in the home."""
    secret = token()
    d, canary = home_canary(secret)
    try:
        exp = stage(tmp_path, "staged_symlink", {})
        os.symlink(canary, exp / "data.txt")
        os.symlink(canary, exp / "results.json")
        r = run_exp(exp, tmp_path / "runs")
    finally:
        shutil.rmtree(d)
    assert (r.exp / "data.txt").is_symlink(), "staging copied the secret instead of the link"
    secret_free(r, secret)
    assert_failed_with(r, exception=("FileNotFoundError", "PermissionError"),
                       classes=("missing_data", "sandbox_restriction"))


def test_fifos_under_collected_names(tmp_path):
    names = ["results.json", "final_info.json", "run.log", "result.json", "manifest.json",
             "environment.txt", "labbox.yaml", "metrics.json", "stdout", "output.log"]
    exp = stage(tmp_path, "fifo_names", {"names": names})
    os.mkfifo(exp / "staged.fifo")  # in the source directory too: staging must not open it
    os.mkfifo(exp / "final_info.json")
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait(timeout=120)  # a hang fails here
    assert r.result["metrics"]["values"].get("score") == 1, r.why()
    iss = [i for i in r.result["metric_issues"] if i.get("where") == "results.json"]
    assert iss and re.search(r"FIFO|regular file", iss[0].get("message", "")), r.result["metric_issues"]
    manifest = (r.run_dir / "manifest.json").read_text()
    assert "staged.fifo" in manifest, "the skipped FIFO is not listed in the manifest"
    assert r.rc in (0, 4), r.why()


def test_sparse_huge_results_json(tmp_path):
    exp = stage(tmp_path, "sparse_results", {})
    lr = LiveRun(exp, tmp_path / "runs")
    try:
        r = lr.wait(timeout=120)
        assert lr.labbox_hwm_kb * 1024 <= 256 * MiB, f"labbox's peak RSS {lr.labbox_hwm_kb} kB"
        iss = [i for i in r.result["metric_issues"] if i.get("where") == "results.json"]
        assert iss, r.result["metric_issues"]
        made = report(r).get("results", {}).get("results.json", {})
        if made.get("ok"):
            # the 64 GiB file exists: labbox must refuse it for its size, not read it
            assert re.search(r"limit|large", iss[0].get("message", "")), r.result["metric_issues"]
        else:
            # the disk limit's RLIMIT_FSIZE stopped the file from growing at all
            assert made.get("errname") == "EFBIG", made
        assert r.result["metrics"]["values"].get("score") == 1, r.why()
        assert r.rc in (0, 4), r.why()
    finally:
        for d in run_dirs(tmp_path / "runs"):
            for n in ("results.json", "final_info.json"):
                if (d / "exp" / n).exists():
                    (d / "exp" / n).unlink()


# === resources ==================================================================================

def test_fork_bomb(tmp_path):
    limit = 64
    exp = stage(tmp_path, "fork_bomb", {"max_total": 600})
    lr = LiveRun(exp, tmp_path / "runs", "--pids-limit", limit,
                 *(["--allow-degraded", "pids"] if not host_can_enforce("pids") else []))
    r = lr.wait()
    assert_enforced_by(r, "pids_enforced_by", "pids")
    assert lr.peak_procs <= limit + 1, f"{lr.peak_procs} processes in the sandbox (limit {limit})"
    assert not run_survivors(lr, r), "processes of the fork bomb outlived the run"
    assert r.result["metrics"]["values"]["forked"] < limit, r.why()
    assert_failed_with(r, exception="BlockingIOError", classes=("sandbox_restriction",))
    # positive control: a smaller bomb without the limit, and the host counts past it
    ctl = LiveRun(stage(tmp_path, "fork_bomb", {"max_total": 60}, name="control"), tmp_path / "ctl")
    ctl.wait()
    assert ctl.peak_procs > limit + 1, f"positive control: only {ctl.peak_procs} processes seen"


def test_thread_bomb(tmp_path):
    limit = 32
    exp = stage(tmp_path, "thread_bomb", {"max_total": 2000})
    lr = LiveRun(exp, tmp_path / "runs", "--pids-limit", limit,
                 *(["--allow-degraded", "pids"] if not host_can_enforce("pids") else []))
    r = lr.wait()
    assert_enforced_by(r, "pids_enforced_by", "pids")
    assert lr.peak_threads <= limit + 1, f"{lr.peak_threads} threads in the sandbox (limit {limit})"
    assert r.result["metrics"]["values"]["threads"] < limit, r.why()
    assert_failed_with(r, exception="RuntimeError", classes=("sandbox_restriction",))
    ctl = LiveRun(stage(tmp_path, "thread_bomb", {"max_total": 60}, name="control"), tmp_path / "ctl")
    ctl.wait()
    assert ctl.peak_threads > limit + 1, f"positive control: only {ctl.peak_threads} threads seen"


def test_memory_bomb_in_several_processes(tmp_path):
    limit = 256 * MiB
    exp = stage(tmp_path, "memory_bomb_tree", {"children": 4, "per_child_mb": 384})
    lr = LiveRun(exp, tmp_path / "runs", "--memory", "256m",
                 *(["--allow-degraded", "memory"] if not host_can_enforce("memory") else []))
    r = lr.wait()
    assert_enforced_by(r, "memory_enforced_by", "memory")
    assert not run_survivors(lr, r)
    if host_can_enforce("memory"):
        assert lr.peak_rss_sum_kb * 1024 <= limit + 48 * MiB, \
            f"the tree held {lr.peak_rss_sum_kb} kB at once (limit {limit >> 10} kB)"
        assert r.rc == 137 and r.result["status"] == "oom" and r.result["oom_killed"], r.why()
        assert r.result["failure"]["class"] == "oom", r.why()
    else:
        # the accepted fallback is per process: each one stays under the limit
        assert max(lr.hwm.values() or [0]) * 1024 <= limit + 48 * MiB, lr.hwm
        assert_failed_with(r, exception="MemoryError", classes=("oom",))
    # positive control: without the limit the host sees the tree take all of it
    ctl = LiveRun(stage(tmp_path, "memory_bomb_tree", {"children": 4, "per_child_mb": 384},
                        name="control"), tmp_path / "ctl")
    assert_completed(ctl.wait())
    assert ctl.peak_rss_sum_kb * 1024 > 4 * 300 * MiB, f"positive control: {ctl.peak_rss_sum_kb} kB"


@pytest.mark.host_wide
def test_memory_bomb_in_tmpfs(tmp_path):
    """RAM taken through the private /dev/shm (tmpfs), which no process's RSS shows."""
    limit = 256 * MiB
    exp = stage(tmp_path, "memory_tmpfs", {"bytes": 1200 * MiB})
    lr = LiveRun(exp, tmp_path / "runs", "--memory", "256m", shmem=True,
                 *(["--allow-degraded", "memory"] if not host_can_enforce("memory") else []))
    r = lr.wait()
    assert_enforced_by(r, "memory_enforced_by", "memory")
    if host_can_enforce("memory"):
        assert lr.peak_shmem <= limit + 64 * MiB, f"shared memory grew by {lr.peak_shmem >> 20} MiB"
        assert r.rc == 137 and r.result["status"] == "oom", r.why()
    else:
        # an rlimit does not count tmpfs pages: what bounds them is the tmpfs size (1 GiB)
        assert lr.peak_shmem <= GiB + 64 * MiB, f"shared memory grew by {lr.peak_shmem >> 20} MiB"
        assert_failed_with(r, classes=("sandbox_restriction",), text="No space left on device")
    # positive control: without a limit the host sees the tmpfs fill up to its size
    ctl = LiveRun(stage(tmp_path, "memory_tmpfs", {"bytes": 1200 * MiB}, name="control"),
                  tmp_path / "ctl", shmem=True)
    ctl.wait()
    assert ctl.peak_shmem > 768 * MiB, f"positive control: shared memory grew {ctl.peak_shmem >> 20} MiB"


@pytest.mark.host_wide
def test_fill_private_tmp_dirs(tmp_path):
    bound = 1536 * MiB
    exp = stage(tmp_path, "fill_tmp", {"bound": bound})
    lr = LiveRun(exp, tmp_path / "runs", shmem=True, disk="/")
    r = lr.wait(timeout=300)
    assert lr.min_free >= lr.disk_before - 256 * MiB, \
        f"the host's disk lost {(lr.disk_before - lr.min_free) >> 20} MiB during the run"
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not os.path.exists(os.path.join(d, "fill.bin")), f"the fill reached the host's {d}"
    assert lr.peak_shmem <= GiB + 128 * MiB, f"tmpfs memory grew by {lr.peak_shmem >> 20} MiB"
    vals = r.result["metrics"]["values"]
    assert vals.get("tmp_mb", 1 << 30) <= 1024, vals
    assert_failed_with(r, classes=("sandbox_restriction",), text="No space left on device")


@pytest.mark.host_wide
def test_fill_exp_does_not_fill_host_disk(tmp_path):
    """exp/ lives on the host's disk. Writing there until the disk is full must end at a limit
    of the sandbox (ENOSPC, EDQUOT or EFBIG), not at the host's last free byte. The attack is
    bounded here, so that a missing limit fails the test instead of filling the disk."""
    free = free_bytes(str(tmp_path))
    bound = min(2 * GiB, free // 8)
    limit = 512 * MiB
    exp = stage(tmp_path, "fill_exp", {"bound": bound})
    lr = LiveRun(exp, tmp_path / "runs", *disk_limit_opts("512m"), disk=str(tmp_path))
    try:
        r = lr.wait(timeout=600)
        written = r.result["metrics"]["values"].get("written_mb", 0)
        assert lr.min_free >= free - bound - 256 * MiB
        # exp/'s own file system holds the limit; polled, what passes it before the next
        # check is bounded
        assert written * MiB <= limit + (0 if IS_ROOT else 256 * MiB), r.why()
        assert written * MiB < bound, (
            f"exp/ has no size limit: the experiment wrote {written} MiB into exp/ (on the "
            f"host's disk, {free >> 30} GiB free) and only this test's bound of {bound >> 20} MiB "
            f"stopped it; unbounded, it fills the host's disk")
        # exp/ ended over the limit: the verdict says so, whether the supervisor stopped the
        # tree or the file size limit made its last write fail first
        assert_failed_with(r, classes=("sandbox_restriction",), status="disk_limit",
                           text="disk limit")
    finally:
        for d in run_dirs(tmp_path / "runs"):
            f = d / "exp" / "fill.bin"
            if f.exists():
                f.unlink()


@pytest.mark.parametrize("mode", ["lines", "oneline", "names"])
def test_output_flood(tmp_path, mode):
    """GiBs of output (in lines, or one line without end, or hundreds of thousands of metric
    names): labbox's own memory stays bounded, run.log stays capped, and the last metric line
    is still collected."""
    params = {"mode": mode, "bytes": 2 * GiB if mode == "lines" else GiB, "names": 300000}
    exp = stage(tmp_path, "output_flood", params)
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait(timeout=600)
    bound = (256 if is_asan_build() else 64) * MiB
    assert lr.labbox_hwm_kb * 1024 <= bound, \
        f"labbox's peak RSS was {lr.labbox_hwm_kb >> 10} MiB for {mode} (bound {bound >> 20} MiB)"
    assert r.result["metrics"]["values"].get("final_metric") == 42, r.result["metrics"]["values"].get("final_metric")
    assert (r.run_dir / "run.log").stat().st_size <= 16 * MiB + 64 * 1024
    if mode == "names":
        assert any(i.get("kind") == "dropped" for i in r.result["metric_issues"]), r.why()
        assert r.rc == 4 and r.result["status"] == "invalid_metrics", r.why()
    else:
        assert r.result["log"]["truncated"] is True, r.result["log"]
        assert_completed(r)


@pytest.mark.parametrize("kind", ["pids", "memory"])
def test_raising_rlimits(tmp_path, kind):
    limit = 32
    if kind == "pids":
        opts = ["--pids-limit", limit] + (["--allow-degraded", "pids"] if not host_can_enforce("pids") else [])
    else:
        opts = ["--memory", "256m"] + (["--allow-degraded", "memory"] if not host_can_enforce("memory") else [])
    exp = stage(tmp_path, "rlimit_raise", {"kind": kind, "limit": limit, "alloc_mb": 512})
    lr = LiveRun(exp, tmp_path / "runs", *opts)
    r = lr.wait()
    res = results_of(report(r))
    if kind == "pids":
        assert_enforced_by(r, "pids_enforced_by", "pids")
        assert lr.peak_procs <= limit + 1, f"{lr.peak_procs} processes (limit {limit})"
        assert r.result["metrics"]["values"]["forked"] < limit, r.why()
        assert res.get("raise_core", {}).get("errname") == "EPERM", r.why()
        if not host_can_enforce("pids"):
            assert res.get("raise_nproc", {}).get("errname") == "EPERM", r.why()
        assert_failed_with(r, exception="BlockingIOError", classes=("sandbox_restriction",))
    else:
        assert_enforced_by(r, "memory_enforced_by", "memory")
        assert r.result["metrics"]["values"].get("allocated_mb", 0) < 256, r.why()
        if host_can_enforce("memory"):
            assert lr.peak_rss_sum_kb * 1024 <= 304 * MiB, lr.peak_rss_sum_kb
            assert r.rc == 137 and r.result["status"] == "oom", r.why()
        else:
            assert res.get("raise_data", {}).get("errname") == "EPERM", r.why()
            assert max(lr.hwm.values() or [0]) * 1024 <= 304 * MiB, lr.hwm
            assert_failed_with(r, exception="MemoryError", classes=("oom",))


# === processes ==================================================================================

def test_kill_host_process(tmp_path, make_victim):
    v = make_victim()
    exp = stage(tmp_path, "kill_host", {"victim_pid": v.pid, "victim_pgid": os.getpgid(v.pid),
                                        "kill_all": True})
    r = run_exp(exp, tmp_path / "runs")
    time.sleep(0.3)
    assert v.alive() and v.state()[0][0] in "SR", f"the host process was hit: {v.state()}"
    assert not failed_attempts(report(r), "kill", "killpg", "stop", "pidfd"), report(r)
    assert_failed_with(r, exception="ProcessLookupError")
    # positive control (without kill -1): the same identity outside kills a second victim
    v2 = make_victim()
    (exp / "params.json").write_text(json.dumps({"victim_pid": v2.pid,
                                                 "victim_pgid": os.getpgid(v2.pid)}))
    run_unsandboxed(exp, tmp_path)
    assert wait_for(lambda: v2.proc.poll() is not None, 5), "positive control: victim survived"


def test_ptrace_host_process(tmp_path, make_victim):
    v = make_victim()
    exp = stage(tmp_path, "ptrace_host", {"victim_pid": v.pid})
    r = run_exp(exp, tmp_path / "runs")
    state, tracer = v.state()
    assert v.alive() and tracer == 0 and state[0] in "SR", f"victim traced or stopped: {state} {tracer}"
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)
    v2 = make_victim()
    (exp / "params.json").write_text(json.dumps({"victim_pid": v2.pid, "control": True}))
    p, ctl = run_unsandboxed(exp, tmp_path)
    assert results_of(ctl).get("seize", {}).get("ok"), f"positive control: PTRACE_SEIZE failed: {ctl}"


def test_daemons_do_not_outlive_the_run(tmp_path):
    marker = unique("lbxd")
    exp = stage(tmp_path, "daemons", {"marker": marker})
    lr = LiveRun(exp, tmp_path / "runs", args=[marker])
    r = lr.wait()
    try:
        left = run_survivors(lr, r, marker)
        assert not left, f"processes of the run outlived it: {left}"
        assert lr.peak_procs >= 5, f"the daemons never ran ({lr.peak_procs} processes seen)"
        assert r.result["metrics"]["values"]["daemons_started"] == 4, r.why()
        assert_completed(r)
    finally:
        lr.kill()


def test_sigterm_ignoring_burners_at_budget(tmp_path):
    exp = stage(tmp_path, "budget_burner", {})
    lr = LiveRun(exp, tmp_path / "runs", "--budget", 3, "--grace", 1)
    r = lr.wait()
    try:
        assert not run_survivors(lr, r), "CPU burners outlived the budget"
        assert lr.peak_procs >= 4, lr.peak_procs
        assert r.rc == 124 and r.result["status"] == "timeout" and r.result["timed_out"], r.why()
        assert r.result["failure"]["class"] == "timeout", r.why()
        assert r.result["metrics"]["values"].get("progress") == 1, "partial metrics lost"
    finally:
        lr.kill()


def test_sigkill_labbox_mid_run(tmp_path):
    marker = unique("lbxk")
    exp = stage(tmp_path, "daemons", {"marker": marker, "tail_sleep": 600})
    lr = LiveRun(exp, tmp_path / "runs", args=[marker])
    try:
        assert lr.wait_started(log_has("DAEMONS-STARTED"), 60), "the daemons never started"
        lr.sample()
        assert lr.pidns and lr.peak_procs >= 5, lr.peak_procs
        (rd,) = run_dirs(tmp_path / "runs")
        lr.proc.send_signal(signal.SIGKILL)
        lr.proc.wait(timeout=10)
        left = run_survivors(lr, None, marker, timeout=10, run_dir=rd)
        assert not left, f"processes survived SIGKILL of labbox for 10 s: {left}"
        res = json.loads((rd / "result.json").read_text())
        assert res["status"] == "running", res  # labbox never finished, and the record says so
    finally:
        lr.kill()


def test_kernel_attack_surface(tmp_path):
    exp = stage(tmp_path, "kernel_syscalls", {})
    r = run_exp(exp, tmp_path / "runs")
    res = results_of(report(r))
    wrong = {n: v for n, v in res.items()
             if v.get("errname") != ("ENOSYS" if n == "clone3" else "EPERM")}
    assert not wrong, f"calls not refused by the filter: {wrong}"
    assert_failed_with(r, **DENIED)
    # positive control: outside, these reach the kernel (no EPERM), so only the filter stops them
    p, ctl = run_unsandboxed(exp, tmp_path)
    cres = results_of(ctl)
    for n in ("io_uring_setup", "keyctl"):
        assert cres.get(n, {}).get("ok") or cres.get(n, {}).get("errname") != "EPERM", cres.get(n)


def test_mount_table(tmp_path):
    secret = token()
    d, canary = home_canary(secret)
    host_mounts = Path("/proc/self/mountinfo").read_text()
    try:
        exp = stage(tmp_path, "mount_attacks", {"home": str(HOME), "canary": str(canary), "hold": 1})
        lr = LiveRun(exp, tmp_path / "runs")
        r = lr.wait()
    finally:
        shutil.rmtree(d)
    assert Path("/proc/self/mountinfo").read_text() == host_mounts, "the host's mounts changed"
    assert_one_namespace_each(lr)
    secret_free(r, secret)
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)


def test_new_namespaces(tmp_path):
    exp = stage(tmp_path, "unshare_setns", {"hold": 1})
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait()
    assert_one_namespace_each(lr)
    res = results_of(report(r))
    assert not failed_attempts(report(r)), res
    assert res["clone3"]["errname"] == "ENOSYS", res
    assert_failed_with(r, **DENIED)


@pytest.mark.parametrize("attack", ["chroot", "pivot_root"])
def test_chroot_and_pivot_root(tmp_path, attack):
    exp = stage(tmp_path, attack, {"hold": 1})
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait()
    assert_one_namespace_each(lr)
    assert not failed_attempts(report(r)), report(r)
    assert_failed_with(r, **DENIED)


def test_setuid_programs_give_no_privilege(tmp_path):
    exp = stage(tmp_path, "setuid_exec", {})
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait()
    assert any(name == "passwd" for name, _ in lr.uids), f"passwd never seen: {lr.uids}"
    privileged = [(n, u) for n, u in lr.uids if PAYLOAD_UID not in (u[0],) or 0 in u[:3]]
    assert not privileged, f"processes of the run with other identities (host view): {privileged}"
    assert r.result["metrics"]["values"].get("passwd_euid") == PAYLOAD_UID, r.why()
    assert_completed(r)
    p, ctl = run_unsandboxed(exp, tmp_path)
    assert (results_of(ctl).get("passwd", {}).get("value") or [None, None])[1] == 0, \
        f"positive control: passwd outside did not run as root: {ctl}"


def in_terminal(argv_for, cwd=None, timeout=120):
    """Run the command ARGV_FOR(slave_path) with a new pty as its controlling terminal and
    stdin/stdout/stderr. Returns (its output, what it left in the terminal's input queue)."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    argv = argv_for(name)

    def ctty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                         start_new_session=True, preexec_fn=ctty)
    out = b""
    deadline = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < deadline:
        out += read_all_nonblocking(master)
    if p.poll() is None:
        p.kill()
    p.wait()
    out += read_all_nonblocking(master)
    # what a shell reading this terminal would get next
    attrs = termios.tcgetattr(slave)
    attrs[3] &= ~termios.ICANON
    attrs[6][termios.VMIN] = 0
    attrs[6][termios.VTIME] = 0
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    queued = b""
    for _ in range(100):
        b = os.read(slave, 4096)
        if not b:
            break
        queued += b
    os.close(slave)
    os.close(master)
    return out, queued


def test_tiocsti_with_a_terminal(tmp_path):
    """labbox started from a real terminal; the experiment tries to type a command into it."""
    tag = unique("sti").replace("-", "")
    needle = f"LBXINJ{tag}"
    payload_hex = f"echo {needle}\n".encode().hex()
    runs = tmp_path / "runs"
    exp = stage(tmp_path, "tiocsti", {"payload_hex": payload_hex, "pts": "/dev/pts/none"})

    def sandboxed(pts):
        (exp / "params.json").write_text(json.dumps({"payload_hex": payload_hex, "pts": pts}))
        return [LABBOX, "run", "-q", *POLICY, "--python", PYTHON, "--runs-dir", str(runs), str(exp)]
    out, queued = in_terminal(sandboxed)
    assert needle.encode() not in queued, f"the experiment typed into the terminal: {queued!r}"
    assert needle.encode() not in out, f"injected text echoed on the terminal: {out[-500:]!r}"
    (rd,) = run_dirs(runs)

    class R:  # the run, as assert_failed_with wants it
        result = json.loads((rd / "result.json").read_text())
        rc = result["labbox_exit_code"]
        run_dir = rd
        exp = rd / "exp"

        def why(self):
            return json.dumps(self.result, indent=1)[:3000] + "\n" + out[-2000:].decode(errors="replace")
    assert not failed_attempts(report(R)), report(R)
    assert_failed_with(R(), **DENIED)
    # positive control: the same script run directly in a terminal does inject
    legacy = Path("/proc/sys/dev/tty/legacy_tiocsti")
    if legacy.exists() and legacy.read_text().strip() == "0":
        return  # this kernel refuses TIOCSTI to everyone: nothing to compare with
    work = tmp_path / "control"
    shutil.copytree(exp, work)

    def direct(pts):
        (work / "params.json").write_text(json.dumps({"payload_hex": payload_hex, "pts": pts}))
        return [PYTHON, "main.py"]
    _, cq = in_terminal(direct, cwd=work)
    assert needle.encode() in cq, f"positive control: the direct run did not inject: {cq!r}"


def test_signals_to_init_and_supervisor(tmp_path):
    exp = stage(tmp_path, "signal_init", {})
    lr = LiveRun(exp, tmp_path / "runs")
    r = lr.wait()
    assert not run_survivors(lr, r)
    assert r.result["metrics"]["values"].get("still_running") == 1, r.why()
    assert_completed(r)


def test_init_fds_and_file_handles(tmp_path):
    secret = token()
    d, canary = home_canary(secret)
    try:
        exp = stage(tmp_path, "fd_handles", {"home": str(HOME), "canary": str(canary)})
        r = run_exp(exp, tmp_path / "runs")
    finally:
        shutil.rmtree(d)
    secret_free(r, secret)
    res = results_of(report(r))
    leaks = {n: v for n, v in res.items() if v.get("ok") and n != "name_to_handle_at"}
    assert not leaks, f"reached init's files or the file system by handle: {leaks}"
    assert_failed_with(r, **DENIED)
