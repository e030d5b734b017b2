"""Fixtures of the hostile-experiment corpus; the helpers live in escape_lib.py."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from escape_lib import (IS_ROOT, LABBOX, PAYLOAD_GID, PAYLOAD_UID, PYTHON, token, unique,
                        wait_for)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "host_wide: reads the host's free disk or shared memory as a whole, so it "
        "runs alone (make escape and run-as-user run these after the others, one at a time)")


@pytest.fixture(scope="session", autouse=True)
def _labbox_binary():
    if not os.access(LABBOX, os.X_OK):
        pytest.fail(f"labbox binary not found or not executable: {LABBOX} "
                    f"(build it with `make`, or set LABBOX_BIN)", pytrace=False)


class Victim:
    """A host process with a secret in its environment, run as the identity the experiment has
    inside the sandbox (nobody when root): without the sandbox, that identity may signal it,
    trace it and read its environment."""

    def __init__(self):
        self.secret = token()
        self.marker = unique("lbxvictim")

        def drop():
            if IS_ROOT:
                os.setgroups([])
                os.setgid(PAYLOAD_GID)
                os.setuid(PAYLOAD_UID)
        self.proc = subprocess.Popen(
            [PYTHON, "-c", "import time\nfor _ in range(6000): time.sleep(0.1)", self.marker],
            env={"PATH": "/usr/bin:/bin", "LBX_VICTIM_SECRET": self.secret}, cwd="/",
            preexec_fn=drop, start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.pid = self.proc.pid
        assert wait_for(lambda: self.marker.encode() in _cmdline(self.pid), 10)

    def state(self):
        try:
            with open(f"/proc/{self.pid}/status") as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            return st["State"].strip(), int(st["TracerPid"])
        except OSError:
            return "gone", 0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@pytest.fixture
def make_victim():
    made = []

    def make():
        v = Victim()
        made.append(v)
        return v
    yield make
    for v in made:
        v.stop()


@pytest.fixture
def public_dir():
    """A directory every user can traverse (as a project directory under /home or /work is),
    outside the sandbox's hidden and private places only where the host has one."""
    d = Path(tempfile.mkdtemp(prefix="labbox-escape-public-", dir="/tmp"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def visible_dir():
    """A directory the sandbox sees (read-only), unlike anything under /tmp, /var/tmp or a
    home: only root has one to write to on an ordinary host."""
    if not IS_ROOT:
        pytest.skip("an ordinary user can write only to places the sandbox hides or makes "
                    "private (/tmp, /var/tmp, /dev/shm, the home)")
    for base in ("/var/lib", "/srv", "/opt"):
        try:
            d = Path(tempfile.mkdtemp(prefix="labbox-escape-", dir=base))
            break
        except OSError:
            continue
    else:
        pytest.skip("no writable directory outside the hidden and private ones")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)
