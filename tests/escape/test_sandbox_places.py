"""A place inside the sandbox is joined to its new root by spelling. A volume destination with
a '..' part climbed out of it: its mount point was made on the host (directories anywhere the
user could write, an empty file for a file volume) and the volume was missing inside, exit 0.
Such destinations, and volumes, tmpfs mounts and hides of the places the sandbox builds itself
(/, /proc, /sys, /dev), are usage errors now, named before anything runs. Checked from the
host's side, as root and (run-as-user) as an ordinary user, from the flags and from a recorded
run's manifest."""
import json
import os
import subprocess
from pathlib import Path

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT, user_dirs

NEWROOT_DEPTH = 2  # the sandbox's new root is /tmp/.labbox-root: two parts below /


def labbox(*args, env=None):
    return subprocess.run([LABBOX, *map(str, args)], capture_output=True, text=True,
                          timeout=CALL_TIMEOUT, env=env)


def climbing(target: Path) -> str:
    """A destination that, joined to the new root by spelling, is target on the host."""
    return "/a" + "/.." * (NEWROOT_DEPTH + 1) + str(target)


def world(p: Path):
    p.mkdir(parents=True, exist_ok=True)
    os.chmod(p, 0o755)
    return p


def test_a_volume_destination_that_climbs_makes_nothing_on_the_host(tmp_path):
    base = world(tmp_path / "b")
    src = world(base / "data")
    (src / "x.txt").write_text("data")
    os.chmod(src / "x.txt", 0o644)
    exp = world(base / "exp")
    (exp / "main.py").write_text("import os\nprint('seen:', int(os.path.exists('/data/x.txt')))\n")
    os.chmod(exp / "main.py", 0o644)
    env = user_dirs(base / "cache")
    for i, (cmd, tail) in enumerate([("run", ["--runs-dir", base / "runs", exp]),
                                     ("exec", ["--", "/bin/true"])]):
        target = base / f"made-on-host-{i}"
        for dst in (climbing(target / "sub"), "/data/../data", "/./data"):
            p = labbox(cmd, "-v", f"{src}:{dst}", *tail, env=env)
            assert p.returncode == 2, (cmd, dst, p.returncode, p.stderr)
            assert dst in p.stderr and "'..' part" in p.stderr, p.stderr
        assert not target.exists(), f"{cmd}: the mount point was made on the host"
    # A file volume would have made an empty file there.
    f = base / "file.txt"
    f.write_text("f")
    os.chmod(f, 0o644)
    target = base / "made-file"
    p = labbox("exec", "-v", f"{f}:{climbing(target)}", "--", "/bin/true", env=env)
    assert p.returncode == 2 and not target.exists(), p.stderr
    # The destination as meant still works.
    p = labbox("run", "--json", "--runs-dir", base / "runs", "-v", f"{src}:/data", exp, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["metrics"]["values"]["seen"] == 1


def test_a_recorded_climbing_volume_is_refused_by_rerun(tmp_path):
    """A manifest edited to hold such a volume (its seal then fails, and rerun asks for
    --accept-grants): even accepted, nothing is made on the host."""
    base = world(tmp_path / "b")
    src = world(base / "data")
    exp = world(base / "exp")
    (exp / "main.py").write_text("print('v: 1')\n")
    os.chmod(exp / "main.py", 0o644)
    env = user_dirs(base / "cache")
    p = labbox("run", "--json", "--runs-dir", base / "runs", "-v", f"{src}:/data", exp, env=env)
    assert p.returncode == 0, p.stderr
    run_dir = Path(json.loads(p.stdout)["run_dir"])
    man = run_dir / "manifest.json"
    m = json.loads(man.read_text())
    target = base / "made-by-rerun"
    text = json.dumps(m).replace(f"{src}:/data", f"{src}:{climbing(target / 'sub')}")
    assert text != json.dumps(m), "the manifest does not name the volume as given"
    man.write_text(text)
    p = labbox("rerun", "--accept-grants", "--runs-dir", base / "runs", run_dir.name, env=env)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert not target.exists(), "rerun made the recorded mount point on the host"


def test_the_sandboxs_own_places_are_refused_as_volumes_tmpfs_and_hides(tmp_path):
    base = world(tmp_path / "b")
    src = world(base / "data")
    env = user_dirs(base / "cache")
    cases = [["-v", f"{src}:/proc/x"], ["-v", f"{src}:/dev/data"], ["-v", f"{src}:/sys/x"],
             ["--tmpfs", "/a/.."], ["--tmpfs", "/sys/fs"],
             ["--hide", "/"], ["--hide", "/usr/.."], ["--hide", "/proc"], ["--hide", "/sys/kernel"],
             ["--hide", "/dev"]]
    for flags in cases:
        p = labbox("exec", *flags, "--", "/bin/true", env=env)
        assert p.returncode == 2, (flags, p.returncode, p.stderr)
        assert flags[1] in p.stderr, p.stderr
        assert "labbox probe" not in p.stderr, p.stderr  # a usage error, not the host's
    p = labbox("exec", "--tmpfs", "/scratch/..b", "--", "/bin/true", env=env)
    assert p.returncode == 0, p.stderr
