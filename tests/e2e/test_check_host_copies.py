"""The static check's compile/parse step reads the experiment's code in a sandbox: whatever it
hands the sandboxed interpreter must not be a host file other users can read, nor one that
stays behind when labbox is killed during the check."""
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON, kill_marker, pids_with_marker, unique, user_dirs, wait_for


def _new_files_with(secret: bytes, since: float, skip: Path):
    """Files under /tmp (three levels down) changed since SINCE that contain SECRET, with
    whether another user could read them, leaving out SKIP (the test's own directory) and
    other pytest sessions' trees."""
    found = []

    def walk(d: Path, depth: int, others_reach: bool):
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        for e in entries:
            p = Path(e.path)
            if p == skip or e.name.startswith("pytest-of-"):
                continue
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and depth < 3:
                walk(p, depth + 1, others_reach and bool(st.st_mode & stat.S_IXOTH))
            elif stat.S_ISREG(st.st_mode) and st.st_mtime >= since and st.st_size < (16 << 20):
                try:
                    if secret in p.read_bytes():
                        found.append((str(p), others_reach and bool(st.st_mode & stat.S_IROTH)))
                except OSError:
                    pass

    walk(Path("/tmp"), 1, True)
    return found


LANGS = {
    # a file whose compile() takes seconds, so that the check is caught in the act
    "python": ("main.py", "dont_inherit=True",
               lambda s: "\n".join([f'API_KEY = "{s}"'] +
                                   [f"def f{i}(x): return x + {i}" for i in range(150000)]) +
               "\nprint('accuracy: 1')\n"),
    "r": ("main.R", "getParseData",
          lambda s: "\n".join([f'api_key <- "{s}"'] +
                              [f"f{i} <- function(x) x + {i}" for i in range(60000)]) +
          '\ncat("accuracy: 1\\n")\n'),
}


@pytest.mark.parametrize("lang", sorted(LANGS))
def test_check_copies_are_private_and_gone_when_labbox_is_killed(tmp_path, lang):
    main, marker, body = LANGS[lang]
    if lang == "r" and not shutil.which("Rscript"):
        pytest.skip("Rscript is not installed")
    secret = unique("sk-secret")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / main).write_text(body(secret))
    env = user_dirs(tmp_path / "cache")
    t0 = time.time() - 1
    cmd = [LABBOX, "run", "--runs-dir", str(tmp_path / "runs"), "--budget", "60", "-q"]
    if lang == "python":
        cmd += ["--python", PYTHON]
    p = subprocess.Popen(cmd + [str(exp)], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        # The sandboxed compiler/parser is running: the check is under way.
        checker = wait_for(lambda: [q for q in pids_with_marker(marker)
                                    if q != p.pid], 60, interval=0.02)
        assert checker, f"the check's {lang} interpreter was never seen running"
        seen = _new_files_with(secret.encode(), t0, tmp_path)
        readable = [f for f, others in seen if others]
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        gone = wait_for(lambda: not pids_with_marker(marker), 30)
        assert gone, "the check's interpreter outlived labbox"
        left = [f for f, _ in _new_files_with(secret.encode(), t0, tmp_path)]
        assert not readable and not left, (
            f"during the check, files other users can read hold the experiment's code (its "
            f"secret) on the host: {readable}; after labbox was killed during the check, these "
            f"copies of it stay on the host: {left}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        kill_marker(secret)
        for f, _ in _new_files_with(secret.encode(), t0, tmp_path):
            d = Path(f).parent
            if d.parent == Path("/tmp") and d.name.startswith("labbox-"):
                shutil.rmtree(d, ignore_errors=True)
