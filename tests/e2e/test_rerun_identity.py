"""What a rerun and a sweep take to be "the same": rerun compares every kind of result a run
records and says what differs in its inputs; a sweep's identity covers what changes its cells'
results; seeds asked for are the ones applied; seeds whose metric went non-finite are counted."""
import json
import os
import signal
import subprocess
import time

from conftest import LABBOX, PYTHON


def labbox(cwd, *args, timeout=180):
    return subprocess.run([LABBOX, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def exp_dir(tmp_path, code, name="exp", files=None):
    d = tmp_path / name
    d.mkdir()
    (d / "main.py").write_text(code)
    for rel, content in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(content)
    return d


def run_json(tmp_path, exp, *opts):
    p = labbox(tmp_path, "run", "--json", "-q", "--python", PYTHON, *opts, exp)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout={p.stdout}\nstderr={p.stderr}")


def rerun_json(tmp_path, run_id):
    p = labbox(tmp_path, "rerun", "--json", "-q", run_id)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout={p.stdout}\nstderr={p.stderr}")


# --- every kind of recorded result takes part in the comparison --------------------------------

STRUCTURED = '''
import os
def r():
    return int.from_bytes(os.urandom(4), "big") / 2**32
print("n_params: 1000")
for c in ("A", "B"):
    for s in range(2):
        print(f"condition={c} seed={s} accuracy: {r():.6f}")
    print(f"SUMMARY condition={c} metric=accuracy mean={r():.6f} std=0.01")
print("PAIRED: A vs B mean_diff=%.6f std_diff=0.01 t_stat=1.0 p_value=0.5" % r())
'''


def test_rerun_compares_tagged_summary_and_paired_results(tmp_path):
    exp = exp_dir(tmp_path, STRUCTURED)
    a = run_json(tmp_path, exp)
    assert a["status"] == "completed", a
    rr = rerun_json(tmp_path, a["id"])["rerun"]
    assert rr["verdict"] == "differ", rr
    keys = {d["key"] for d in rr["differences"]}
    assert {"A/accuracy{seed=0}", "B/accuracy{seed=1}", "SUMMARY:A/accuracy.mean",
            "PAIRED:A vs B.mean_diff"} <= keys, keys
    assert "n_params" not in keys and "SUMMARY:A/accuracy.std" not in keys
    # n_params, 4 tagged, 2 x (mean, std), 4 PAIRED fields
    assert rr["compared"] == 13, rr
    p = labbox(tmp_path, "rerun", "-q", a["id"])
    assert "metrics match the original run: NO" in p.stdout, p.stdout
    assert "SUMMARY:A/accuracy.mean" in p.stdout


def test_runs_compare_lines_up_tagged_summary_and_paired_results(tmp_path):
    exp = exp_dir(tmp_path, STRUCTURED)
    a = run_json(tmp_path, exp)
    b = run_json(tmp_path, exp)
    doc = json.loads(labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"]).stdout)
    by = {m["metric"]: m for m in doc["metrics"]}
    assert by["SUMMARY:A/accuracy.mean"]["equal"] is False
    assert by["A/accuracy{seed=0}"]["equal"] is False
    assert by["PAIRED:A vs B.p_value"]["equal"] is True
    assert doc["compared"] == 13 and doc["differ"] >= 6, doc


def test_rerun_of_identical_structured_results_matches(tmp_path):
    code = ('print("condition=A seed=0 accuracy: 0.5")\n'
            'print("SUMMARY condition=A metric=accuracy mean=0.5 std=0.0")\n'
            'print("condition=A seed=0 fit_time: %d" % int.from_bytes(__import__("os").urandom(2), "big"))\n')
    exp = exp_dir(tmp_path, code)
    a = run_json(tmp_path, exp)
    rr = rerun_json(tmp_path, a["id"])["rerun"]
    assert rr["verdict"] == "match", rr
    # a tagged timing is compared apart, as a plain one is
    assert rr["timing_compared"] == 1 and rr["compared"] == 3, rr


# --- a sweep's identity covers what changes its cells' results ----------------------------------

SWEEP_DATA = '''
import argparse, os
p = argparse.ArgumentParser(); p.add_argument("--seed", type=int); p.parse_args()
print("dataset:", os.environ.get("DATASET", "none"))
print("accuracy:", open("/data/acc").read().strip())
'''


def sweep_json(tmp_path, exp, *opts):
    p = labbox(tmp_path, "sweep", "--python", PYTHON, "--json", "--jobs", "1", "--seeds", "0-1",
               *opts, exp)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout={p.stdout}\nstderr={p.stderr}")


def test_sweep_with_other_env_or_data_is_another_sweep(tmp_path):
    exp = exp_dir(tmp_path, SWEEP_DATA)
    for name, acc in (("d10", "0.9"), ("d100", "0.5")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "acc").write_text(acc + "\n")
    s1 = sweep_json(tmp_path, exp, "-e", "DATASET=cifar10", "-v", f"{tmp_path}/d10:/data:ro")
    assert s1["counts"]["completed"] == 2, s1["counts"]
    # the same command again is the same sweep, its cells reused
    again = sweep_json(tmp_path, exp, "-e", "DATASET=cifar10", "-v", f"{tmp_path}/d10:/data:ro")
    assert again["id"] == s1["id"] and again["counts"]["reused"] == 2
    # another -e value: another sweep, whose cells ran with it
    s2 = sweep_json(tmp_path, exp, "-e", "DATASET=cifar100", "-v", f"{tmp_path}/d10:/data:ro")
    assert s2["id"] != s1["id"] and s2["counts"]["reused"] == 0, s2["counts"]
    assert {c["metrics"]["dataset"] for c in s2["cells"]} == {"cifar100"}
    # another data source under the same destination
    s3 = sweep_json(tmp_path, exp, "-e", "DATASET=cifar10", "-v", f"{tmp_path}/d100:/data:ro")
    assert s3["id"] not in (s1["id"], s2["id"]) and s3["counts"]["reused"] == 0
    assert s3["conditions"][0]["metrics"]["accuracy"]["mean"] == 0.5
    # the same source whose data changed in place
    (tmp_path / "d10" / "acc").write_text("0.7\n")
    s4 = sweep_json(tmp_path, exp, "-e", "DATASET=cifar10", "-v", f"{tmp_path}/d10:/data:ro")
    assert s4["id"] != s1["id"] and s4["counts"]["reused"] == 0
    assert s4["conditions"][0]["metrics"]["accuracy"]["mean"] == 0.7
    p = labbox(tmp_path, "sweep", "--resume", s1["id"], "--json")
    assert p.returncode == 2 and "changed since sweep" in p.stderr, p.stderr


# --- rerun runs what the original ran, and says what differs in its inputs ----------------------

RESUMES = '''
import os
start = int(open("ckpt/epoch.txt").read()) if os.path.exists("ckpt/epoch.txt") else 0
print("start_epoch:", start)
print("accuracy:", round(0.5 + 0.1 * (start + 3), 3))
'''


def test_rerun_leaves_out_files_added_to_the_experiment_since(tmp_path):
    exp = exp_dir(tmp_path, RESUMES)
    a = run_json(tmp_path, exp)
    assert a["metrics"]["values"]["start_epoch"] == 0, a
    (exp / "ckpt").mkdir()
    (exp / "ckpt" / "epoch.txt").write_text("2\n")
    b = rerun_json(tmp_path, a["id"])
    rr = b["rerun"]
    assert rr["verdict"] == "match" and rr["source"] == "expdir", rr
    assert rr["inputs"]["left_out"] == ["ckpt/epoch.txt"], rr["inputs"]
    assert rr["inputs"]["files_staged"] == 1 and rr["inputs"]["changed_in_expdir"] is None
    m = json.load(open(os.path.join(b["run_dir"], "manifest.json")))
    assert sorted(m["files"]) == ["main.py"] and m["left_out_files"] == ["ckpt/epoch.txt"]
    assert not os.path.exists(os.path.join(b["run_dir"], "exp", "ckpt"))
    p = labbox(tmp_path, "rerun", "-q", a["id"])
    assert "metrics match the original run: yes" in p.stdout, p.stdout
    assert "left out: 1 file added to the experiment directory since the original run" in p.stdout
    assert "ckpt/epoch.txt" in p.stdout
    # the original's files still run from the experiment; a plain run takes the new file
    assert run_json(tmp_path, exp)["metrics"]["values"]["start_epoch"] == 2


def test_rerun_names_the_file_that_changed_when_it_uses_the_staged_copy(tmp_path):
    exp = exp_dir(tmp_path, RESUMES)
    a = run_json(tmp_path, exp)
    (exp / "main.py").write_text(RESUMES.replace("0.5 +", "0.6 +"))
    p = labbox(tmp_path, "rerun", "-q", a["id"])
    assert p.returncode == 0, p.stderr
    assert "from its own staged copy ('main.py' changed in" in p.stdout, p.stdout
    rr = rerun_json(tmp_path, a["id"])["rerun"]
    assert rr["source"] == "staged copy" and rr["inputs"]["changed_in_expdir"] == "main.py"
    assert rr["verdict"] == "match"


# --- a run's own directory and id are not a differing result ------------------------------------

OWN_PATH = '''
import json, os
out = os.path.abspath("checkpoints")
json.dump({"accuracy": 0.9, "config": {"lr": 0.1, "output_dir": out}}, open("results.json", "w"))
print("accuracy: 0.9")
'''


def test_rerun_takes_each_runs_own_directory_out_of_the_values(tmp_path):
    exp = exp_dir(tmp_path, OWN_PATH)
    a = run_json(tmp_path, exp)
    assert a["id"] in a["metrics"]["files"]["results.json"]["config"]["output_dir"]
    b = rerun_json(tmp_path, a["id"])
    rr = b["rerun"]
    assert rr["verdict"] == "match" and rr["differences"] == [], rr
    assert [d["key"] for d in rr["own_path_differences"]] == ["results.json:config.output_dir"]
    assert rr["compared"] == 4, rr
    p = labbox(tmp_path, "rerun", "-q", a["id"])
    assert "metrics match the original run: yes" in p.stdout, p.stdout
    assert "equal apart from each run's own directory or id: 1 value" in p.stdout
    doc = json.loads(labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"]).stdout)
    assert doc["differ"] == 0, doc["metrics"]
    e = [m for m in doc["metrics"] if m["metric"].endswith("output_dir")][0]
    assert e["equal"] is True and e["differs_by"] == "run directory"


def test_rerun_still_finds_a_path_that_differs_otherwise(tmp_path):
    code = OWN_PATH.replace('os.path.abspath("checkpoints")',
                            'os.path.abspath("ckpt-%d" % int.from_bytes(os.urandom(4), "big"))')
    exp = exp_dir(tmp_path, code)
    a = run_json(tmp_path, exp)
    rr = rerun_json(tmp_path, a["id"])["rerun"]
    assert rr["verdict"] == "differ" and rr["own_path_differences"] == [], rr
    assert [d["key"] for d in rr["differences"]] == ["results.json:config.output_dir"]


# --- seeds whose metric went non-finite are counted and shown -----------------------------------

DIVERGES = '''
import argparse
p = argparse.ArgumentParser(); p.add_argument("--lr", type=float); p.add_argument("--seed", type=int)
a = p.parse_args()
if a.lr > 0.5 and a.seed % 2 == 1:
    print("accuracy: nan")
else:
    print(f"accuracy: {0.8 + 0.01 * a.seed}")
'''


def test_sweep_counts_the_seeds_whose_metric_diverged(tmp_path):
    exp = exp_dir(tmp_path, DIVERGES)
    p = labbox(tmp_path, "sweep", "--python", PYTHON, "--json", "--jobs", "1", "--param",
               "lr=0.1,1.0", "--seeds", "0-3", exp)
    d = json.loads(p.stdout)
    by = {c["name"]: c for c in d["conditions"]}
    hi, lo = by["lr=1.0"], by["lr=0.1"]
    assert hi["metrics"]["accuracy"]["n"] == 2 and hi["metrics"]["accuracy"]["nonfinite"] == 2
    assert hi["invalid_metrics"] == 2 and hi["seeds_invalid_metrics"] == [1, 3]
    assert lo["metrics"]["accuracy"]["nonfinite"] == 0 and lo["invalid_metrics"] == 0
    out = tmp_path / "rep.md"
    p = labbox(tmp_path, "report", d["id"], "--format", "md", "-o", out)
    assert p.returncode == 0, p.stderr
    row = [line for line in out.read_text().splitlines() if line.startswith("| lr\\=1\\.0")][0]
    assert "(n=2, +2 NaN/Inf)" in row, row


LOSS_DIVERGES = '''
import argparse
p = argparse.ArgumentParser(); p.add_argument("--lr", type=float); p.add_argument("--seed", type=int)
a = p.parse_args()
acc = [0.9, 0.95, 1.0, 0.6][a.seed]
print(f"accuracy: {acc}")
print("loss: nan" if a.lr > 0.5 and a.seed == 3 else f"loss: {1 - acc}")
'''


def test_a_seed_whose_other_metric_diverged_still_counts_in_each_finite_metric(tmp_path):
    """Seed 3 of lr=1.0 printed a finite accuracy (the worst) and a NaN loss: its run is
    invalid_metrics, and its accuracy is still one of the condition's four; leaving it out
    would report the method better than its seeds were."""
    exp = exp_dir(tmp_path, LOSS_DIVERGES)
    p = labbox(tmp_path, "sweep", "--python", PYTHON, "--json", "--jobs", "1", "--param",
               "lr=0.1,1.0", "--seeds", "0-3", exp)
    d = json.loads(p.stdout)
    hi = {c["name"]: c for c in d["conditions"]}["lr=1.0"]
    assert hi["invalid_metrics"] == 1 and hi["seeds_invalid_metrics"] == [3], hi
    acc, loss = hi["metrics"]["accuracy"], hi["metrics"]["loss"]
    assert acc["n"] == 4 and acc["nonfinite"] == 0, acc
    assert abs(acc["mean"] - 0.8625) < 1e-9 and abs(acc["min"] - 0.6) < 1e-9, acc
    assert loss["n"] == 3 and loss["nonfinite"] == 1, loss


# --- a hash seed asked for is applied, or refused -----------------------------------------------

HASHSEED = '''
import argparse, os
p = argparse.ArgumentParser(); p.add_argument("--seed"); p.parse_args()
print("hashseed_seen:", os.environ.get("PYTHONHASHSEED"))
'''


def test_pythonhashseed_asked_for_is_the_one_applied_and_recorded(tmp_path):
    exp = exp_dir(tmp_path, HASHSEED, files={
        "labbox.yaml": 'sweep:\n  seeds: [1, 2]\n  env: {PYTHONHASHSEED: "{seed}"}\n'})
    p = labbox(tmp_path, "sweep", "--python", PYTHON, "--json", "--jobs", "1", exp)
    s = json.loads(p.stdout)
    for c in s["cells"]:
        m = json.load(open(os.path.join(c["run_dir"], "manifest.json")))
        assert c["metrics"]["hashseed_seen"] == c["seed"], c
        assert m["seeds"]["PYTHONHASHSEED"] == str(c["seed"])
        assert m["seeds"]["PYTHONHASHSEED_set_by"] == "user"
    r = run_json(tmp_path, exp, "-e", "PYTHONHASHSEED=7")
    assert r["metrics"]["values"]["hashseed_seen"] == 7, r["metrics"]
    m = json.load(open(os.path.join(r["run_dir"], "manifest.json")))
    assert m["seeds"]["PYTHONHASHSEED"] == "7" and m["config"]["environment"]["PYTHONHASHSEED"] == "7"
    # a rerun repeats it
    assert rerun_json(tmp_path, r["id"])["metrics"]["values"]["hashseed_seen"] == 7
    # without one, labbox's 0, said to be labbox's
    r = run_json(tmp_path, exp)
    assert r["metrics"]["values"]["hashseed_seen"] == 0
    m = json.load(open(os.path.join(r["run_dir"], "manifest.json")))
    assert m["seeds"]["PYTHONHASHSEED"] == "0" and m["seeds"]["PYTHONHASHSEED_set_by"] == "labbox"


def test_pythonhashseed_python_would_refuse_is_refused_before_running(tmp_path):
    exp = exp_dir(tmp_path, HASHSEED)
    p = labbox(tmp_path, "run", "-q", "--python", PYTHON, "-e", "PYTHONHASHSEED=abc", exp)
    assert p.returncode == 2 and "PYTHONHASHSEED=abc" in p.stderr, p.stderr
    assert "integer from 0 to 4294967295" in p.stderr
    (exp / "labbox.yaml").write_text('sweep:\n  seeds: [1]\n  env: {PYTHONHASHSEED: "x{seed}"}\n')
    p = labbox(tmp_path, "sweep", "--python", PYTHON, exp)
    assert p.returncode == 2 and "PYTHONHASHSEED=x1" in p.stderr, p.stderr


def test_runs_compare_shows_mounted_data_that_changed(tmp_path):
    """Two runs over the same -v path whose files changed in between: compare says the
    mounted data differs (its digest), as rerun does, rather than "same" everywhere; two
    runs over unchanged data say it is the same."""
    exp = exp_dir(tmp_path, "print('acc:', float(open('/data/score').read()))\n")
    data = tmp_path / "dataA"
    data.mkdir()
    (data / "score").write_text("0.95\n")
    os.chmod(data, 0o755)
    os.chmod(data / "score", 0o644)
    vol = f"{data}:/data:ro"
    a = run_json(tmp_path, exp, "-v", vol)
    same = run_json(tmp_path, exp, "-v", vol)
    (data / "score").write_text("0.60\n")
    b = run_json(tmp_path, exp, "-v", vol)
    doc = json.loads(labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"]).stdout)
    keys = {d["key"]: d for d in doc["data"]}
    assert "data./data.digest" in keys, doc["data"]
    assert keys["data./data.digest"]["a"] != keys["data./data.digest"]["b"]
    assert doc["files"] == [] and doc["config"] == [], (doc["files"], doc["config"])
    text = labbox(tmp_path, "runs", "compare", a["id"], b["id"]).stdout
    assert "mounted data: differs" in text and "data./data.digest" in text, text
    text = labbox(tmp_path, "runs", "compare", a["id"], same["id"]).stdout
    assert "mounted data: same" in text, text


# --- a rerun killed midway leaves no copy of the code behind ------------------------------------

SLOW_WHEN_FLAGGED = '''
import os, time
if os.path.exists("/flags/slow"):
    time.sleep(120)
print("accuracy: 0.5")
'''


def _rerun_dirs():
    return {e.path for e in os.scandir("/tmp")
            if e.name.startswith("labbox-rerun-") and e.is_dir(follow_symlinks=False)}


def test_a_killed_reruns_copy_of_the_code_is_removed_by_the_next_rerun(tmp_path):
    """The rerun copies the staged files into a private directory under /tmp; when the rerun
    is killed (SIGKILL, the OOM killer) that copy is left, and the next rerun removes it."""
    flags = tmp_path / "flags"
    flags.mkdir()
    exp = exp_dir(tmp_path, SLOW_WHEN_FLAGGED)
    a = run_json(tmp_path, exp, "-v", f"{flags}:/flags:ro")
    assert a["status"] == "completed", a
    # the experiment changed since: the rerun takes the record's staged copy, copied to /tmp
    (exp / "main.py").write_text(SLOW_WHEN_FLAGGED + "# edited\n")
    (flags / "slow").write_text("1")
    before = _rerun_dirs()
    p = subprocess.Popen([LABBOX, "rerun", "-q", a["id"]], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        made = set()
        for _ in range(600):
            made = _rerun_dirs() - before
            if made or p.poll() is not None:
                break
            time.sleep(0.05)
        assert made, "the rerun made no copy of the staged files in /tmp"
        time.sleep(1)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
        assert all(os.stat(d).st_mode & 0o077 == 0 for d in made), "the copy is not private"
        (flags / "slow").unlink()
        b = rerun_json(tmp_path, a["id"])
        assert b["rerun"]["source"] == "staged copy", b["rerun"]
        left = made & _rerun_dirs()
        assert not left, f"the killed rerun's copy of the code is still there after another rerun: {left}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for d in _rerun_dirs() - before:
            subprocess.run(["rm", "-rf", "--", d])
