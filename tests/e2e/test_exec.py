"""`labbox exec -- CMD`: exit statuses, accounting, and the sandbox seen from inside and outside."""
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import termios
import textwrap
import time
from pathlib import Path

import pytest

from conftest import (LABBOX, PYTHON, describe_pids, kill_marker, labbox, pids_with_marker,
                      run_exp, unique, wait_for, wait_no_marker, write_exp)


def py(code, *opts, **kw):
    """labbox exec [opts] -- /usr/bin/python3 -c CODE"""
    return labbox("exec", *opts, "--", PYTHON, "-c", textwrap.dedent(code), **kw)


def out_json(p):
    """The last line of the command's output, parsed (the command prints one JSON line)."""
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    assert lines, f"no output; rc={p.returncode}\nstderr:\n{p.stderr[-2000:]}"
    return json.loads(lines[-1])


# --- exit statuses ----------------------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_status_passthrough(code):
    p = labbox("exec", "--", "/bin/sh", "-c", f"exit {code}")
    assert p.returncode == code, p.stderr


@pytest.mark.parametrize("how,sig", [
    ("kill -KILL $$", signal.SIGKILL),
    ("kill -TERM $$", signal.SIGTERM),
    ("kill -SEGV $$", signal.SIGSEGV),
])
def test_killed_by_own_signal_is_128_plus_sig(how, sig):
    p = labbox("exec", "--", "/bin/sh", "-c", how)
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)


def test_real_segfault_is_139():
    p = py("import ctypes; ctypes.string_at(0)")
    assert p.returncode == 128 + signal.SIGSEGV, (p.returncode, p.stderr)


def test_command_not_found_is_127():
    name = "/usr/bin/" + unique("no-such-cmd")
    p = labbox("exec", "--", name)
    assert p.returncode == 127, (p.returncode, p.stderr)
    assert name in p.stderr or os.path.basename(name) in p.stderr, p.stderr
    p = labbox("exec", "--", unique("no-such-cmd-on-path"))
    assert p.returncode == 127, (p.returncode, p.stderr)


def test_stdout_stderr_pass_through():
    p = labbox("exec", "--", "/bin/sh", "-c", "echo to-out; echo to-err >&2")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "to-out\n", repr(p.stdout)
    assert "to-err" in p.stderr and "to-out" not in p.stderr


def test_stdin_pass_through():
    """`echo data | labbox exec -- wc -l`, as with env, nice, timeout or bwrap."""
    p = labbox("exec", "--", "/bin/sh", "-c", "cat", input="from-stdin\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "from-stdin\n", repr(p.stdout)


def test_budget_kills_with_124():
    t0 = time.monotonic()
    p = labbox("exec", "--budget", 2, "--", "/bin/sleep", "60")
    elapsed = time.monotonic() - t0
    assert p.returncode == 124, (p.returncode, p.stderr)
    assert elapsed < 2 + 5 + 15, elapsed


def test_budget_kills_command_ignoring_sigterm():
    t0 = time.monotonic()
    p = py("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
           "--budget", 2, "--grace", 1)
    elapsed = time.monotonic() - t0
    assert p.returncode == 124, (p.returncode, p.stderr)
    assert elapsed < 2 + 1 + 15, elapsed


# --- --json accounting ------------------------------------------------------------------------

def test_json_accounting():
    code = """
        import os
        print("COMMAND-OUTPUT")
        block = b"\\x01" * (200 * 1024 * 1024)   # 200 MiB, touched
        u0 = os.times().user
        while os.times().user - u0 < 1.0:          # 1 s of user CPU
            pass
    """
    p = py(code, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # stdout is only the document
    assert "COMMAND-OUTPUT" in p.stderr and "COMMAND-OUTPUT" not in p.stdout
    assert doc["schema"] == "labbox.exec/1"
    assert doc["exit_code"] == 0 and doc["timed_out"] is False and doc["signal"] in (None, 0)
    assert isinstance(doc["status"], str) and doc["status"]
    res = doc["resources"]
    assert res["cpu_user_s"] > 0.7, res
    assert res["cpu_sys_s"] >= 0, res
    assert res["wall_s"] >= 1.0, res
    assert res["wall_s"] >= res["cpu_user_s"] * 0.9, res
    assert res["peak_rss_bytes"] >= 200 * 1024 * 1024, res
    assert res["peak_rss_bytes"] < 64 * 1024 ** 3, res
    assert isinstance(doc["isolation"], dict) and doc["isolation"]


def test_json_reports_signal_and_timeout():
    p = labbox("exec", "--json", "--", "/bin/sh", "-c", "kill -KILL $$")
    doc = json.loads(p.stdout)
    assert p.returncode == 137
    assert doc["signal"] in (9, "SIGKILL"), doc
    p = labbox("exec", "--json", "--budget", 1, "--grace", 1, "--", "/bin/sleep", "30")
    doc = json.loads(p.stdout)
    assert p.returncode == 124
    assert doc["timed_out"] is True, doc
    p = labbox("exec", "--json", "--", "/bin/sh", "-c", "exit 5")
    assert p.returncode == 5 and json.loads(p.stdout)["exit_code"] == 5


# --- the view from inside ---------------------------------------------------------------------

def test_fresh_pid_namespace_and_session():
    p = py("""
        import json, os
        pids = [int(x) for x in os.listdir("/proc") if x.isdigit()]
        print(json.dumps({"pids": pids, "pid": os.getpid(), "sid": os.getsid(0),
                          "pgid": os.getpgid(0), "uid": os.getuid(), "gid": os.getgid()}))
    """)
    assert p.returncode == 0, p.stderr
    d = out_json(p)
    assert len(d["pids"]) <= 5, d  # the host has many more
    assert d["pid"] < 10, d
    assert d["sid"] == d["pid"], d  # session leader: a new session
    host_pids = [x for x in os.listdir("/proc") if x.isdigit()]
    assert len(host_pids) > len(d["pids"])
    if os.getuid() == 0:
        assert d["uid"] == 65534, d  # root callers run the command as nobody


def test_no_privileges_inside():
    p = py("""
        import json
        st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
        print(json.dumps({k: st[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp")}))
    """)
    assert p.returncode == 0, p.stderr
    d = out_json(p)
    assert int(d["CapEff"], 16) == 0 and int(d["CapPrm"], 16) == 0, d
    assert d["NoNewPrivs"] == "1", d
    assert d["Seccomp"] == "2", d  # a filter is in place


def test_dev_tty_cannot_be_opened_even_with_a_controlling_terminal():
    """Run labbox from a real terminal; the sandboxed command must not reach it."""
    code = textwrap.dedent("""
        try:
            open("/dev/tty", "rb").close()
            print("TTY-RESULT:opened")
        except OSError as e:
            print("TTY-RESULT:refused:%s" % e.errno)
    """)

    def in_terminal(argv):
        master, slave = os.openpty()

        def make_ctty():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                             preexec_fn=make_ctty)
        os.close(slave)
        chunks = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                b = os.read(master, 4096)
            except OSError:
                break
            if not b:
                break
            chunks.append(b)
        p.wait(timeout=30)
        os.close(master)
        return b"".join(chunks).decode(errors="replace")

    control = in_terminal([PYTHON, "-c", code])
    assert "TTY-RESULT:opened" in control, control  # the harness does give a terminal
    inside = in_terminal([LABBOX, "exec", "--", PYTHON, "-c", code])
    assert "TTY-RESULT:refused" in inside, inside


def test_inherited_fds_are_closed():
    r, w = os.pipe()
    os.dup2(w, 37)
    try:
        p = subprocess.run([LABBOX, "exec", "--", PYTHON, "-c", textwrap.dedent("""
            import json, os
            try:
                os.fstat(37)
                fd37 = "open"
            except OSError:
                fd37 = "closed"
            print(json.dumps({"fd37": fd37, "fds": sorted(int(x) for x in os.listdir("/proc/self/fd"))}))
        """)], pass_fds=(37,), capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        d = out_json(p)
        assert d["fd37"] == "closed", d
        assert [f for f in d["fds"] if f > 2 and f != max(d["fds"])] == [], d  # listdir's own fd
    finally:
        os.close(37)
        os.close(r)
        os.close(w)


def test_hostname_is_not_the_hosts():
    p = py("import socket; print(socket.gethostname())")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() and p.stdout.strip() != socket.gethostname(), p.stdout


def test_clean_environment():
    canary = unique("canary")
    env = {**os.environ, "LBX_SECRET_TOKEN": canary, "PYTHONPATH": "/" + canary,
           "LD_PRELOAD": "", "SSH_AUTH_SOCK": "/tmp/" + canary, "HOME": "/root"}
    p = labbox("exec", "-e", "MY_VAR=given", "--", "/usr/bin/env", env=env)
    assert p.returncode == 0, p.stderr
    inside = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    assert inside.get("MY_VAR") == "given", inside
    assert inside.get("HOME") == "/tmp", inside
    assert "PATH" in inside, inside
    assert canary not in p.stdout, inside
    for k in ("LBX_SECRET_TOKEN", "PYTHONPATH", "LD_PRELOAD", "SSH_AUTH_SOCK"):
        assert k not in inside, (k, inside)
    allowed = {"PATH", "HOME", "LANG", "TMPDIR", "TERM", "MY_VAR"}
    copied = {k for k, v in inside.items()
              if k not in allowed and not k.startswith("LC_") and env.get(k) == v}
    assert not copied, f"copied from the caller's environment: {copied}"


def test_filesystem_view():
    tag = unique("fs")
    p = py(f"""
        import json, os
        out = {{}}
        for path in ("/usr/{tag}", "/etc/{tag}", "/{tag}", "/opt/{tag}", "/var/{tag}",
                     "/tmp/{tag}", "/var/tmp/{tag}", "/dev/shm/{tag}"):
            try:
                open(path, "w").write("x")
                out[path] = "written"
            except OSError as e:
                out[path] = "refused"
        out["etc_readable"] = os.path.exists("/etc/passwd")
        print(json.dumps(out))
    """)
    assert p.returncode == 0, p.stderr
    d = out_json(p)
    for path in ("/usr", "/etc", "", "/opt", "/var"):
        assert d[f"{path}/{tag}"] == "refused", d
    for path in ("/tmp", "/var/tmp", "/dev/shm"):
        assert d[f"{path}/{tag}"] == "written", d   # private and writable inside
        assert not os.path.exists(f"{path}/{tag}"), f"{path}/{tag} reached the host"
    assert d["etc_readable"] is True


def test_minimal_dev():
    p = py("""
        import json, os, stat
        entries = {}
        for n in os.listdir("/dev"):
            try:
                m = os.lstat("/dev/" + n).st_mode
            except OSError:
                continue
            entries[n] = "blk" if stat.S_ISBLK(m) else "chr" if stat.S_ISCHR(m) else "other"
        works = open("/dev/null", "w").write("x") == 1 and len(open("/dev/urandom", "rb").read(8)) == 8
        print(json.dumps({"entries": entries, "works": works}))
    """)
    assert p.returncode == 0, p.stderr
    d = out_json(p)
    assert d["works"] is True
    blk = [n for n, k in d["entries"].items() if k == "blk"]
    assert not blk, f"block devices visible: {blk}"
    for bad in ("mem", "kmem", "port", "kmsg", "kvm", "userfaultfd", "vsock", "btrfs-control"):
        assert bad not in d["entries"], d["entries"]
    assert len(d["entries"]) < len(os.listdir("/dev")), d["entries"]


def test_private_tmp_hides_host_tmp():
    tag = unique("hosttmp")
    host_file = Path("/tmp") / tag
    host_file.write_text("host-only")
    try:
        p = py(f"import os; print('visible' if os.path.exists('/tmp/{tag}') else 'hidden')")
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "hidden", p.stdout
    finally:
        host_file.unlink()


def test_homes_are_hidden():
    tag = unique("home")
    home = Path(os.path.expanduser("~"))
    home_file = home / (tag + ".txt")
    # root can make another user's home under /home; an ordinary user uses a directory in its
    # own home, which is hidden all the same
    other_home = (Path("/home") if os.getuid() == 0 else home) / tag
    home_file.write_text("secret")
    other_home.mkdir()
    (other_home / "id_rsa").write_text("secret")
    os.chmod(other_home, 0o755)
    os.chmod(other_home / "id_rsa", 0o644)  # readable even for nobody: only hiding protects it
    try:
        p = py(f"""
            import json, os
            def ls(d):
                try:
                    return sorted(os.listdir(d))
                except OSError as e:
                    return "error %s" % e.errno
            print(json.dumps({{
                "home_file": os.path.exists({str(home_file)!r}),
                "other_home": os.path.exists({str(other_home / 'id_rsa')!r}),
                "ls_root": ls("/root"), "ls_home": ls("/home"), "ls_myhome": ls({str(home)!r}),
            }}))
        """)
        assert p.returncode == 0, p.stderr
        d = out_json(p)
        assert d["home_file"] is False and d["other_home"] is False, d
        for k in ("ls_root", "ls_home", "ls_myhome"):
            assert not isinstance(d[k], list) or d[k] == [], d
    finally:
        home_file.unlink()
        shutil.rmtree(other_home)


@pytest.fixture(scope="module")
def home_venv():
    """A venv (no pip) under /home/<unique>/ next to a secret file, as a user's would be."""
    base = (Path("/home") if os.getuid() == 0 else Path(os.path.expanduser("~"))) / unique("venvhome")
    base.mkdir()
    os.chmod(base, 0o755)
    try:
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
        (base / "secret.txt").write_text("secret")
        os.chmod(base / "secret.txt", 0o644)
        yield base
    finally:
        shutil.rmtree(base)


def test_python_from_venv_in_hidden_home_runs(home_venv):
    venv_py = home_venv / "venv" / "bin" / "python"
    p = labbox("exec", "--", venv_py, "-c", "import sys; print(sys.prefix)")
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stdout.strip() == str(home_venv / "venv"), p.stdout


def test_venv_exposure_does_not_expose_rest_of_home(home_venv):
    venv_py = home_venv / "venv" / "bin" / "python"
    secret = home_venv / "secret.txt"
    p = labbox("exec", "--", venv_py, "-c", f"import os; print(os.path.exists({str(secret)!r}))")
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert p.stdout.strip() == "False", p.stdout


def test_run_with_venv_python_in_hidden_home(home_venv, tmp_path):
    venv_py = home_venv / "venv" / "bin" / "python"
    exp = write_exp(tmp_path, "import sys\nprint('in_venv: %d' % (sys.prefix != sys.base_prefix))\n")
    r = run_exp(exp, tmp_path / "runs", python=venv_py)
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["in_venv"] == 1, r.why()


def test_workdir(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    os.chmod(wd, 0o777)
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    os.chmod(sibling, 0o777)
    os.chmod(tmp_path, 0o755)
    p = py(f"""
        import os
        print(os.getcwd())
        open("made.txt", "w").write("inside")
        try:
            open({str(sibling / 'x.txt')!r}, "w").write("x")
        except OSError:
            pass
    """, "--workdir", wd)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[0] == str(wd)
    assert (wd / "made.txt").read_text() == "inside"
    assert not (sibling / "x.txt").exists()


def test_default_cwd_is_tmp():
    p = py("import os; print(os.getcwd())")
    assert p.returncode == 0 and p.stdout.strip() == "/tmp", (p.stdout, p.stderr)


# --- network ----------------------------------------------------------------------------------

def test_network_loopback_only():
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    try:
        p = py(f"""
            import json, socket
            out = {{}}
            for host in ("127.0.0.1",):
                s = socket.socket(); s.settimeout(2)
                try:
                    s.connect((host, {port})); out["host"] = "connected"
                except OSError as e:
                    out["host"] = "refused"
                s.close()
            # loopback itself works inside
            a = socket.socket(); a.bind(("127.0.0.1", 0)); a.listen(1)
            b = socket.create_connection(a.getsockname(), timeout=2)
            c, _ = a.accept(); c.sendall(b"ping"); out["loopback"] = b.recv(4).decode()
            out["ifaces"] = [n for _, n in socket.if_nameindex()]
            print(json.dumps(out))
        """, "--network", "loopback")
        try:
            conn, _ = srv.accept()
            conn.close()
            accepted = True
        except socket.timeout:
            accepted = False
        assert not accepted, "the sandboxed command reached a host socket"
        assert p.returncode == 0, p.stderr
        d = out_json(p)
        assert d["host"] == "refused" and d["loopback"] == "ping", d
        assert d["ifaces"] == ["lo"], d
    finally:
        srv.close()


def test_network_none_allows_only_unix_sockets():
    """The default: every socket family but AF_UNIX is refused with EPERM (a PermissionError
    Python can report), so nothing can even be attempted over IP, raw or netlink sockets."""
    p = py("""
        import json, socket
        out = {}
        for name in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET"):
            fam = getattr(socket, name)
            kind = socket.SOCK_RAW if name in ("AF_NETLINK", "AF_PACKET") else socket.SOCK_STREAM
            try:
                socket.socket(fam, kind).close(); out[name] = "created"
            except PermissionError:
                out[name] = "EPERM"
            except OSError as e:
                out[name] = "other: %s" % e
        a, b = socket.socketpair(); a.sendall(b"x"); out["AF_UNIX"] = b.recv(1).decode()
        print(json.dumps(out))
    """)
    assert p.returncode == 0, p.stderr
    d = out_json(p)
    assert d == {"AF_INET": "EPERM", "AF_INET6": "EPERM", "AF_NETLINK": "EPERM",
                 "AF_PACKET": "EPERM", "AF_UNIX": "x"}, d


# --- process lifetime -------------------------------------------------------------------------

DAEMONIZE = """
import os, sys, time
code = "import time; time.sleep(600)"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", code, "{marker}"])
    os._exit(0)
os.wait()
time.sleep(0.5)
print("DAEMONIZED", flush=True)
{tail}
"""


def exec_to_file(tmp_path, *args, timeout=60):
    """labbox exec ARGS with stdout/stderr in files, so that a leftover process holding the
    output open cannot make the test wait: the test waits for labbox itself only."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with open(out, "w") as o, open(err, "w") as e:
        p = subprocess.Popen([LABBOX, "exec", *map(str, args)], stdout=o, stderr=e,
                             stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError(f"labbox exec did not return within {timeout}s")
    return rc, out.read_text(), err.read_text()


def test_daemon_dies_when_command_exits(tmp_path):
    marker = unique("execdaemon")
    try:
        rc, out, err = exec_to_file(tmp_path, "--", PYTHON, "-c",
                                    DAEMONIZE.format(marker=marker, tail=""))
        left = pids_with_marker(marker)
        assert not left, "outlived labbox exec:\n" + describe_pids(left)
        assert rc == 0 and "DAEMONIZED" in out, (rc, out, err)
    finally:
        kill_marker(marker)


def test_daemon_dies_on_budget(tmp_path):
    marker = unique("execdaemon")
    try:
        rc, out, err = exec_to_file(tmp_path, "--budget", 3, "--grace", 1, "--", PYTHON, "-c",
                                    DAEMONIZE.format(marker=marker, tail="time.sleep(600)"))
        left = pids_with_marker(marker)
        assert not left, "outlived labbox exec:\n" + describe_pids(left)
        assert rc == 124 and "DAEMONIZED" in out, (rc, out, err)
    finally:
        kill_marker(marker)


def test_tree_dies_with_labbox_sigkill(tmp_path):
    marker = unique("execdaemon")
    flag = tmp_path / "out"
    flag.mkdir()
    os.chmod(flag, 0o777)
    os.chmod(tmp_path, 0o755)
    code = DAEMONIZE.format(marker=marker, tail="open('started', 'w').close()\ntime.sleep(600)")
    p = subprocess.Popen([LABBOX, "exec", "-w", str(flag), "--", PYTHON, "-c", code],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: (flag / "started").exists(), 60), "command never started"
        assert pids_with_marker(marker), "daemon not running before the kill"
        p.kill()
        p.wait(timeout=10)
        left = wait_no_marker(marker, 10)
        assert not left, "survived SIGKILL of labbox for 10 s:\n" + describe_pids(left)
    finally:
        p.kill()
        p.wait()
        kill_marker(marker)


def test_closed_stdin_and_stderr_of_labbox():
    """Started with fd 0 and 2 closed (as some schedulers do), labbox must not mistake its own
    pipes for them: the command sees an empty stdin and its output still arrives."""
    p = subprocess.run([LABBOX, "exec", "--", "/bin/sh", "-c", "cat; echo done"],
                       stdout=subprocess.PIPE, text=True, timeout=60,
                       preexec_fn=lambda: (os.close(0), os.close(2)))
    assert p.returncode == 0
    assert p.stdout == "done\n"
