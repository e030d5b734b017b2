"""--hide PATH keeps a host path out of the experiment's sight wherever the sandbox would
show it: through a -v volume, under exec's work directory, in every cell of a sweep, and
again when the run is repeated with rerun. Checked from the host's side: the experiment
tries to read, the host reads what it printed and the records. As root and (run-as-user) as
an ordinary user."""
import json
import os
import subprocess
from pathlib import Path

from escape_lib import LABBOX, PYTHON, CALL_TIMEOUT, token, user_dirs

SPY = r'''
import os, sys
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            print("SEEN", p, sorted(os.listdir(p)))
        else:
            print("SEEN", p, open(p).read().strip())
    except OSError as e:
        print("GONE", p, e.errno)
print("done: 1")
'''


def labbox(*args, env=None):
    return subprocess.run([LABBOX, *map(str, args)], capture_output=True, text=True,
                          timeout=CALL_TIMEOUT, env=env)


def data_dir(base: Path, secret: str):
    """A data directory with a secret directory, a secret file and a public file, all
    readable by the sandbox's uid (as root the payload runs as nobody)."""
    d = base / "data"
    (d / "private").mkdir(parents=True)
    (d / "private" / "key.txt").write_text(secret)
    (d / "token.txt").write_text(secret)
    (d / "public.txt").write_text("public")
    for p in [base, d, d / "private"]:
        os.chmod(p, 0o755)
    for p in [d / "private" / "key.txt", d / "token.txt", d / "public.txt"]:
        os.chmod(p, 0o644)
    return d


def spy_exp(base: Path):
    e = base / "exp"
    e.mkdir()
    (e / "main.py").write_text(SPY)
    return e


def seen(log: str, path: str):
    """What the spy saw of path: the line it printed for it."""
    for line in log.splitlines():
        if line.split(" ")[1:2] == [path]:
            return line
    raise AssertionError(f"no line for {path} in:\n{log[-2000:]}")


def run_json(*args, env=None):
    p = labbox("run", "--json", *args, env=env)
    doc = json.loads(p.stdout)
    return p, doc


def test_hidden_paths_stay_hidden_through_a_volume_and_in_a_rerun(tmp_path):
    secret = token()
    d = data_dir(tmp_path, secret)
    exp = spy_exp(tmp_path)
    runs = tmp_path / "runs"
    args = ["--policy", "permissive", "--python", PYTHON, "--runs-dir", runs,
            "-v", f"{d}:/data", "--hide", d / "private", "--hide", d / "token.txt", exp,
            "--", "/data/private/key.txt", "/data/private", "/data/token.txt",
            "/data/public.txt"]
    p, doc = run_json(*args)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    log = (Path(doc["run_dir"]) / "run.log").read_text()
    assert secret not in log, log[-2000:]
    assert seen(log, "/data/private/key.txt").startswith("GONE"), log
    assert seen(log, "/data/private") == "SEEN /data/private []", log
    assert seen(log, "/data/token.txt").rstrip() == "SEEN /data/token.txt", log
    assert seen(log, "/data/public.txt") == "SEEN /data/public.txt public", log
    # recorded, so that the run can be repeated as it was
    manifest = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert manifest["config"]["sandbox"]["hide"] == [str(d / "private"), str(d / "token.txt")]
    # the repeat hides them too (it used to drop --hide and show them)
    p = labbox("rerun", "--json", "--runs-dir", runs, doc["id"])
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    again = json.loads(p.stdout)
    assert again["run_dir"] != doc["run_dir"]
    log = (Path(again["run_dir"]) / "run.log").read_text()
    assert "done: 1" in log, log[-2000:]
    assert secret not in log, log[-2000:]
    assert seen(log, "/data/public.txt") == "SEEN /data/public.txt public", log


def test_exec_hides_paths_and_other_runs_under_its_work_directory(tmp_path):
    """exec binds --workdir at its own path after the masks were made: the paths hidden under
    it (--hide, and the records of runs directories this user's labbox used) were shown
    again by that bind."""
    secret = token()
    env = user_dirs(tmp_path / "cache")
    wd = tmp_path / "work"
    d = data_dir(wd, secret)
    exp = spy_exp(tmp_path)
    runs = wd / "proj" / "runs"
    p, doc = run_json("--policy", "permissive", "--python", PYTHON, "--runs-dir", runs,
                      "-e", f"API_KEY={secret}", exp, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    for q in [wd, wd / "proj", *(wd / "proj").rglob("*")]:
        os.chmod(q, 0o755 if q.is_dir() else 0o644)
    p = subprocess.run([LABBOX, "exec", "--workdir", wd, "--hide", d / "private", "--hide",
                        d / "token.txt", "--", "/bin/sh", "-c",
                        f"cat {d}/private/key.txt {d}/token.txt {d}/public.txt; "
                        f"cat {runs}/*/manifest.json; ls {runs}"],
                       capture_output=True, text=True, timeout=CALL_TIMEOUT, env=env)
    out = p.stdout + p.stderr
    assert secret not in out, out[-2000:]
    assert "public" in p.stdout, out[-2000:]
    assert doc["id"] not in out, out[-2000:]


def test_a_sweep_hides_in_every_cell_and_on_resume(tmp_path):
    secret = token()
    d = data_dir(tmp_path, secret)
    exp = spy_exp(tmp_path)
    runs = tmp_path / "runs"
    p = labbox("sweep", "--json", "--policy", "permissive", "--python", PYTHON,
               "--runs-dir", runs, "--seeds", "0,1", "--args", "{seed}", "-v", f"{d}:/data",
               "--hide", d / "private", exp, "--", "/data/private/key.txt",
               "/data/public.txt")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    sweep = json.loads(p.stdout)
    logs = [(r / "run.log").read_text() for r in runs.iterdir()]
    assert len(logs) == 2
    for log in logs:
        assert secret not in log, log[-2000:]
        assert seen(log, "/data/private/key.txt").startswith("GONE"), log
        assert seen(log, "/data/public.txt") == "SEEN /data/public.txt public", log
    # a resume runs with what the sweep was started with
    p = labbox("sweep", "--json", "--resume", sweep["id"], "--retry-failed", "--runs-dir", runs)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert json.dumps(doc).count(secret) == 0


def test_hiding_a_path_of_the_experiment_is_refused(tmp_path):
    """The experiment runs on a copy of its directory: hiding a file of it would hide
    nothing, so labbox says so and runs nothing."""
    secret = token()
    exp = spy_exp(tmp_path)
    (exp / "credentials.txt").write_text(secret)
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, "--hide",
               exp / "credentials.txt", exp)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    err = json.loads(p.stdout)
    assert err["status"] == "usage_error"
    msg = err["error"]["message"]
    assert "--hide" in msg and "credentials.txt" in msg and "copied into the run" in msg, err
    assert not runs.exists() or not any(runs.iterdir())
    p = labbox("sweep", "--python", PYTHON, "--runs-dir", runs, "--seeds", "0", "--hide",
               exp, exp)
    assert p.returncode == 2, p.stderr[-2000:]
    assert "--hide" in p.stderr and str(exp) in p.stderr, p.stderr


def test_a_backend_that_cannot_hide_refuses(tmp_path):
    """Colab's worker mounts the whole Drive: labbox cannot hide anything there, and says
    so rather than run."""
    exp = spy_exp(tmp_path)
    drive = tmp_path / "drive"
    drive.mkdir()
    p = labbox("run", "--json", "--mode", "colab", "--drive", drive, "--python", PYTHON,
               "--runs-dir", tmp_path / "runs", "--hide", exp.parent / "drive", exp)
    assert p.returncode in (2, 125), p.stdout[-2000:] + p.stderr[-2000:]
    err = json.loads(p.stdout)
    assert "--hide" in json.dumps(err) and "colab" in json.dumps(err), err
    assert not list(drive.rglob("job.json")), list(drive.rglob("*"))


def test_a_link_of_the_experiment_does_not_stage_a_hidden_path(tmp_path):
    """A link out of the experiment to Python code is staged as the code's content (so the
    check reads it and the manifest hashes it): a link into a hidden path would copy what
    --hide keeps out of sight into the run. The run stops naming the link; nothing of the
    hidden path reaches the run directory."""
    secret = token()
    hid = tmp_path / "hid"
    (hid / "pkg").mkdir(parents=True)
    (hid / "pkg" / "mod.py").write_text(f"KEY = {secret!r}\n")
    (hid / "creds.py").write_text(f"TOKEN = {secret!r}\n")
    for p in [tmp_path, hid, hid / "pkg"]:
        os.chmod(p, 0o755)
    exp = spy_exp(tmp_path)
    (exp / "main.py").write_text("import creds, lib.mod\nprint(creds.TOKEN, lib.mod.KEY)\n")
    for link, hide in (("creds.py", hid / "creds.py"), ("lib", hid / "pkg")):
        for q in ("creds.py", "lib"):
            if (exp / q).is_symlink():
                (exp / q).unlink()
        (exp / link).symlink_to(hid / ("creds.py" if link == "creds.py" else "pkg"))
        runs = tmp_path / ("runs-" + link)
        p, doc = run_json("--python", PYTHON, "--runs-dir", runs, "--hide", hide, exp)
        assert p.returncode != 0, p.stdout[-2000:]
        msg = doc["failure"]["summary"] if doc.get("failure") else json.dumps(doc)
        assert link in msg and "--hide" in msg, msg
        for f in runs.rglob("*"):
            if f.is_file():
                assert secret not in f.read_text(errors="replace"), f


def test_a_hidden_path_that_is_not_there_stops_the_run(tmp_path):
    """--hide of a path that does not exist hides nothing: a typo, or a file the experiment
    moved since the run that is repeated (its new place would be in sight). labbox says so
    and runs nothing, on the command line and in a rerun."""
    secret = token()
    vol = tmp_path / "vol"
    (vol / "sub").mkdir(parents=True)
    (vol / "sub" / "secret.txt").write_text(secret)
    os.chmod(tmp_path, 0o755)  # it holds the runs directory: open to others, it is refused
    for p in [vol, vol / "sub"]:
        os.chmod(p, 0o777)
    os.chmod(vol / "sub" / "secret.txt", 0o644)
    exp = spy_exp(tmp_path)
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, "--hide",
               tmp_path / "no-such-file", exp)
    assert p.returncode == 2, p.stdout[-2000:]
    assert "no-such-file" in json.loads(p.stdout)["error"]["message"]
    p, doc = run_json("--policy", "permissive", "--python", PYTHON, "--runs-dir", runs,
                      "-v", f"{vol}:/data:rw", "--hide", vol / "sub" / "secret.txt", exp,
                      "--", "/data/sub/secret.txt")
    assert p.returncode == 0, p.stdout[-2000:]
    os.rename(vol / "sub", vol / "moved")  # as the experiment could, through the volume
    p = labbox("rerun", "--json", "--runs-dir", runs, doc["id"])
    assert p.returncode == 2, p.stdout[-2000:]
    assert "secret.txt" in json.loads(p.stdout)["error"]["message"]
