"""Verdicts you can trust on real research code (issue 9): results files are this run's, their
values reach the run index and the summary, rerun compares what the experiment reported, and
what ran is what was recorded. Experiments in the style of AI-Scientist templates: argparse
--out_dir, final_info.json with means and stderrs, results.json, stdout lines."""
import json
import os
import sqlite3
import subprocess

import pytest

from conftest import LABBOX, PYTHON, host_can_enforce

# An AI-Scientist-style experiment.py: trains (here: computes) and writes
# OUT/final_info.json {"dataset": {"means": {...}, "stderrs": {...}}}.
TEMPLATE = '''
import argparse, json, os, sys
p = argparse.ArgumentParser()
p.add_argument("--out_dir", type=str, default="run_0")
p.add_argument("--fail", action="store_true")
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
if args.fail:
    raise RuntimeError("training diverged before the first eval")
os.makedirs(args.out_dir, exist_ok=True)
val = round(1.0 + args.lr, 6)
final = {"shakespeare_char": {"means": {"val_loss": val, "train_loss": val - 0.25},
                              "stderrs": {"val_loss": 0.01, "train_loss": 0.02}}}
with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
    json.dump(final, f)
print("best_val_loss: %r" % val)
'''


def labbox(cwd, *args, timeout=180):
    return subprocess.run([LABBOX, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def make_exp(tmp_path, code=TEMPLATE, name="exp", files=None):
    d = tmp_path / name
    d.mkdir()
    (d / "experiment.py").write_text(code)
    for rel, content in (files or {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(content)
    return d


def run_json(tmp_path, exp, *args, opts=()):
    p = labbox(tmp_path, "run", "--json", "-q", "--python", PYTHON, "--entry", "experiment.py",
               *opts, exp, "--", *args)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"rc={p.returncode}\nstdout={p.stdout}\nstderr={p.stderr}")
    return p, doc


STALE = {"run_0/final_info.json": json.dumps(
    {"shakespeare_char": {"means": {"val_loss": 0.42}, "stderrs": {"val_loss": 0.0}}})}


# --- 1. results files are this run's ----------------------------------------------------------

def test_stale_final_info_of_an_earlier_run_is_not_the_failed_runs_metrics(tmp_path):
    exp = make_exp(tmp_path, files=STALE)
    p, doc = run_json(tmp_path, exp, "--out_dir", "run_0", "--fail")
    assert p.returncode == 1 and doc["status"] == "failed", p.stderr
    m = doc["metrics"]
    assert m["files"] == {}, m["files"]
    assert m["stale_results"] == ["run_0/final_info.json"]
    stale = [w for w in doc["metric_warnings"] if w["kind"] == "stale_file"]
    assert [w["where"] for w in stale] == ["run_0/final_info.json"]
    assert "not collected" in stale[0]["message"]
    assert doc["partial"] is False  # nothing of this run's was left
    # the index does not hold the stale value either
    rows = json.loads(labbox(tmp_path, "runs", "list", "--json").stdout)["runs"]
    assert not any("0.42" in json.dumps(r["metrics"]) for r in rows), rows
    # and the summary a person reads says so
    p = labbox(tmp_path, "run", "-q", "--python", PYTHON, "--entry", "experiment.py", exp,
               "--", "--out_dir", "run_0", "--fail")
    assert "stale: run_0/final_info.json" in p.stdout and "0.42" not in p.stdout, p.stdout


def test_final_info_in_the_declared_default_out_dir_is_collected(tmp_path):
    """An AI-Scientist template run as it is, without --out_dir, writes final_info.json into
    its argparse default (run_0): those are its results, not "no metric"; a stale one there is
    still not taken for them, and a default labbox cannot read without running the code (an
    expression) leaves the directory unknown, as before."""
    exp = make_exp(tmp_path)
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc["metric_issues"])
    fi = doc["metrics"]["files"]["run_0/final_info.json"]
    assert fi["shakespeare_char"]["means"]["val_loss"] == 1.1
    exp = make_exp(tmp_path, name="stale", files=STALE)
    p, doc = run_json(tmp_path, exp, "--fail")
    assert p.returncode == 1 and doc["metrics"]["files"] == {}, doc["metrics"]
    assert doc["metrics"]["stale_results"] == ["run_0/final_info.json"], doc["metrics"]
    code = TEMPLATE.replace('default="run_0"', 'default=os.path.join("run_0")').replace(
        'print("best_val_loss: %r" % val)', "")
    exp = make_exp(tmp_path, name="expr", code=code)
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 4 and doc["metrics"]["files"] == {}, doc["metrics"]


def test_a_staged_results_file_the_run_rewrites_is_collected(tmp_path):
    exp = make_exp(tmp_path, files=STALE)
    p, doc = run_json(tmp_path, exp, "--out_dir", "run_0")
    assert p.returncode == 0, p.stderr
    fi = doc["metrics"]["files"]["run_0/final_info.json"]
    assert fi["shakespeare_char"]["means"]["val_loss"] == 1.1
    assert "stale_results" not in doc["metrics"]
    assert not [w for w in doc["metric_warnings"] if w["kind"] == "stale_file"]


def test_rewritten_with_identical_bytes_counts_as_written(tmp_path):
    """A deterministic experiment run again writes the same bytes: those are its results."""
    content = json.dumps({"accuracy": 0.9})
    code = "import json\nopen('results.json', 'w').write(%r)\n" % content
    exp = make_exp(tmp_path, code=code, files={"results.json": content})
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 0, doc
    assert doc["metrics"]["files"]["results.json"] == {"accuracy": 0.9}
    assert "stale_results" not in doc["metrics"]


def test_only_stale_results_and_exit_0_is_no_metrics(tmp_path):
    """A run that exits 0 and leaves only a stale results.json reported nothing."""
    exp = make_exp(tmp_path, code="print('done')\n",
                   files={"results.json": json.dumps({"accuracy": 0.99})})
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 4 and doc["status"] == "invalid_metrics", doc["metric_issues"]
    assert [i["kind"] for i in doc["metric_issues"]] == ["no_metrics"]
    assert doc["metrics"]["stale_results"] == ["results.json"]


# --- 2. results-file values in the run index and the summary ----------------------------------

def test_final_info_means_and_stderrs_are_in_the_index(tmp_path):
    exp = make_exp(tmp_path)
    _, a = run_json(tmp_path, exp, "--out_dir", "run_0", "--lr", "0.1")
    _, b = run_json(tmp_path, exp, "--out_dir", "run_1", "--lr", "0.5")
    assert a["status"] == b["status"] == "completed"

    def ids(*filt):
        p = labbox(tmp_path, "runs", "list", "--json", *filt)
        assert p.returncode == 0, p.stderr
        return [r["id"] for r in json.loads(p.stdout)["runs"]]

    assert ids("--metric", "shakespeare_char.means.val_loss<1.2") == [a["id"]]
    assert ids("--metric", "shakespeare_char.means.val_loss>=1.5") == [b["id"]]
    assert ids("--metric", "shakespeare_char.stderrs.val_loss") == [b["id"], a["id"]]
    # one file named: FILE:path
    assert ids("--metric", "run_1/final_info.json:shakespeare_char.means.val_loss>0") == [b["id"]]
    assert ids("--metric", "shakespeare_char.means.nothing") == []

    p = labbox(tmp_path, "runs", "show", "--json", a["id"])
    row = json.loads(p.stdout)["index"]
    assert row["metrics"]["shakespeare_char.means.val_loss"] == 1.1
    assert row["metrics"]["shakespeare_char.stderrs.train_loss"] == 0.02
    p = labbox(tmp_path, "runs", "show", a["id"])
    assert "shakespeare_char.means.val_loss" in p.stdout

    # run_0 against run_1: the same dotted names, so they line up
    p = labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"])
    m = {e["metric"]: e for e in json.loads(p.stdout)["metrics"]}
    e = m["shakespeare_char.means.val_loss"]
    assert e["a"] == 1.1 and e["b"] == 1.5 and abs(e["delta"] - 0.4) < 1e-9 and not e["equal"]
    assert m["shakespeare_char.stderrs.val_loss"]["equal"] is True

    con = sqlite3.connect(tmp_path / ".labbox" / "labbox.db")
    got = con.execute("SELECT file, value FROM file_metrics WHERE run_id = ? AND name = ?",
                      (a["id"], "shakespeare_char.means.val_loss")).fetchall()
    con.close()
    assert got == [("run_0/final_info.json", 1.1)]


def test_results_json_scalars_in_the_index_and_a_name_both_report(tmp_path):
    code = ("import json\nprint('accuracy: 0.5')\n"
            "json.dump({'accuracy': 0.75, 'model': 'mlp', 'eval': {'f1': 0.6},"
            " 'curve': list(range(100))}, open('results.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp)
    assert r["status"] == "completed", r
    p = labbox(tmp_path, "runs", "show", "--json", r["id"])
    m = json.loads(p.stdout)["index"]["metrics"]
    # the stdout metric keeps its name; the file's value of the same name is qualified
    assert m["accuracy"] == 0.5 and m["results.json:accuracy"] == 0.75
    assert m["eval.f1"] == 0.6 and m["model"] == "mlp"
    assert not any(k.startswith("curve") for k in m)  # a long series is not indexed
    p = labbox(tmp_path, "runs", "list", "--json", "--metric", "results.json:accuracy>0.7")
    assert [x["id"] for x in json.loads(p.stdout)["runs"]] == [r["id"]]


def test_summary_shows_results_file_values_bounded(tmp_path):
    code = ("import json\nmeans = {'m%02d' % i: i / 10 for i in range(30)}\n"
            "json.dump({'ds': {'means': means}}, open('final_info.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    p = labbox(tmp_path, "run", "-q", "--python", PYTHON, "--entry", "experiment.py", exp)
    assert p.returncode == 0, p.stderr
    assert "final_info.json: ds.means.m00=0.0, ds.means.m01=0.1" in p.stdout, p.stdout
    assert "ds.means.m19=1.9" in p.stdout and "ds.means.m20" not in p.stdout
    assert "+10 more values in results files" in p.stdout


# --- 3. rerun compares what the experiment reported -------------------------------------------

def rerun(tmp_path, run_id, *opts):
    p = labbox(tmp_path, "rerun", "--json", "-q", *opts, run_id)
    doc = json.loads(p.stdout)
    return p, doc


def test_rerun_compares_final_info_values(tmp_path):
    """An AI-Scientist template reports in final_info.json only: rerun compares those values."""
    code = TEMPLATE.replace('print("best_val_loss: %r" % val)\n', "")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp, "--out_dir", "run_0")
    assert r["status"] == "completed", r
    p, doc = rerun(tmp_path, r["id"])
    assert p.returncode == 0, p.stderr
    rr = doc["rerun"]
    assert rr["compared"] == 4 and rr["verdict"] == "match" and rr["metrics_match"] is True
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: yes" in p.stdout
    assert "compared: 4 values" in p.stdout, p.stdout


def test_rerun_finds_a_difference_in_a_results_file(tmp_path):
    code = ("import json, os\nv = int.from_bytes(os.urandom(4), 'big')\n"
            "json.dump({'ds': {'means': {'val_loss': v, 'iters': 10}, 'name': 'nano'}},"
            " open('final_info.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp)
    p, doc = rerun(tmp_path, r["id"])
    rr = doc["rerun"]
    assert rr["verdict"] == "differ" and rr["metrics_match"] is False
    assert [d["key"] for d in rr["differences"]] == ["final_info.json:ds.means.val_loss"]
    assert rr["compared"] == 3
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: NO, 1 differ" in p.stdout
    assert "final_info.json:ds.means.val_loss" in p.stdout


def test_rerun_numbers_as_numbers_strings_exactly_arrays_by_digest(tmp_path):
    """The first run writes 1, the rerun 1.0 (a state directory mounted rw tells them apart):
    the same number. A long series that differs in its last element differs by digest."""
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o777)
    code = ("import json, os\n"
            "again = os.path.exists('/state/seen')\n"
            "open('/state/seen', 'w').close()\n"
            "curve = [0.5] * 99 + [float(again) if os.environ.get('CHANGE') else 0.5]\n"
            "json.dump({'lr': 1.0 if again else 1, 'opt': 'adam', 'curve': curve},"
            " open('results.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp, opts=("--policy", "permissive", "-v", f"{state}:/state:rw"))
    assert r["status"] == "completed", r
    assert r["metrics"]["files"]["results.json"]["lr"] == 1
    p, doc = rerun(tmp_path, r["id"])
    assert doc["metrics"]["files"]["results.json"]["lr"] == 1.0
    rr = doc["rerun"]
    assert rr["verdict"] == "match", rr
    assert rr["compared"] == 3  # lr, opt and the curve's digest

    (state / "seen").unlink()
    _, r2 = run_json(tmp_path, exp, opts=("--policy", "permissive", "-v", f"{state}:/state:rw", "-e", "CHANGE=1"))
    _, doc = rerun(tmp_path, r2["id"])
    rr = doc["rerun"]
    assert rr["verdict"] == "differ", rr
    assert [d["key"] for d in rr["differences"]] == ["results.json:curve"]
    assert rr["differences"][0]["a"].startswith("sha256:")


def test_rerun_with_nothing_reported_is_nothing_to_compare(tmp_path):
    exp = make_exp(tmp_path, code="print('done')\n", files={"labbox.yaml": "metrics: none\n"})
    _, r = run_json(tmp_path, exp)
    assert r["status"] == "completed", r
    p, doc = rerun(tmp_path, r["id"])
    assert p.returncode == 0, p.stderr
    rr = doc["rerun"]
    assert rr["compared"] == 0 and rr["verdict"] == "nothing to compare"
    assert rr["metrics_match"] is None and rr["metrics_match_exactly"] is None
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: nothing to compare" in p.stdout
    assert "match the original run: yes" not in p.stdout
    assert json.load(open(os.path.join(doc["run_dir"], "rerun.json")))["verdict"] == "nothing to compare"


def test_rerun_only_timings_is_nothing_to_compare(tmp_path):
    code = ("import json, os\n"
            "json.dump({'ds': {'means': {'train_time': int.from_bytes(os.urandom(2), 'big')}}},"
            " open('final_info.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp)
    _, doc = rerun(tmp_path, r["id"])
    rr = doc["rerun"]
    assert rr["compared"] == 0 and rr["timing_compared"] == 1
    assert rr["verdict"] == "nothing to compare"


def test_runs_compare_counts_what_it_compared(tmp_path):
    exp = make_exp(tmp_path, code="print('done')\n", files={"labbox.yaml": "metrics: none\n"})
    _, a = run_json(tmp_path, exp)
    _, b = run_json(tmp_path, exp)
    p = labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"])
    doc = json.loads(p.stdout)
    assert doc["compared"] == 0 and doc["metrics"] == []
    p = labbox(tmp_path, "runs", "compare", a["id"], b["id"])
    assert "nothing to compare" in p.stdout
    exp2 = make_exp(tmp_path, name="exp2")
    _, c = run_json(tmp_path, exp2, "--out_dir", "run_0", "--lr", "0.1")
    _, d = run_json(tmp_path, exp2, "--out_dir", "run_1", "--lr", "0.2")
    doc = json.loads(labbox(tmp_path, "runs", "compare", "--json", c["id"], d["id"]).stdout)
    # best_val_loss, two means, two stderrs; the means and best_val_loss differ
    assert doc["compared"] == 5 and doc["differ"] == 3


# --- 4. what ran is what was recorded ---------------------------------------------------------

PEAK_SOURCES = ("cgroup memory.peak", "cgroup v1 max_usage", "rusage maxrss of the largest process")


def test_peak_memory_says_what_it_measured(tmp_path):
    code = ("import json\nb = bytearray(120 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
            "json.dump({'ok': 1}, open('results.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    # a memory limit needs a cgroup this user may use (an ordinary user on cgroup v1 has none,
    # and labbox refuses the limit rather than pretend it)
    variants = [()] + ([("--memory", "1g")] if host_can_enforce("memory") else [])
    for opts in variants:
        _, r = run_json(tmp_path, exp, opts=opts)
        res = r["resources"]
        assert res["peak_memory_source"] in PEAK_SOURCES, res
        assert res["peak_memory_bytes"] >= 120 << 20 and res["max_rss_bytes"] >= 120 << 20
        # the old field keeps its number and its source name
        assert res["peak_rss_bytes"] == res["peak_memory_bytes"]
        assert (res["peak_rss_source"] == "cgroup") == res["peak_memory_source"].startswith("cgroup")
        if opts:  # a memory limit needs a cgroup, and the record says which file it read
            assert res["peak_memory_source"].startswith("cgroup"), res


def test_entry_point_linked_out_of_the_experiment_is_refused(tmp_path):
    host = tmp_path / "host_train.py"
    host.write_text("print('acc: 1')\n")
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "experiment.py").symlink_to(host)
    runs = tmp_path / "runs"
    p = labbox(tmp_path, "run", "--python", PYTHON, "--runs-dir", runs, "--entry",
               "experiment.py", exp)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "experiment.py" in p.stderr and str(host) in p.stderr and "symbolic link" in p.stderr
    assert not runs.exists() or not any(runs.iterdir())  # nothing ran, nothing recorded
    p = labbox(tmp_path, "run", "--json", "--python", PYTHON, "--runs-dir", runs, "--entry",
               "experiment.py", exp)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["schema"] == "labbox.error/1" and "symbolic link" in doc["error"]["message"]
    # a relative link that climbs out, and one through a linked directory, likewise
    (exp / "up.py").symlink_to("../host_train.py")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "t.py").write_text("print('acc: 1')\n")
    (exp / "src").symlink_to(tmp_path / "src")
    for entry in ("up.py", "src/t.py"):
        p = labbox(tmp_path, "run", "--python", PYTHON, "--runs-dir", runs, "--entry", entry, exp)
        assert p.returncode == 2 and entry in p.stderr, (entry, p.stderr)
    # a link that stays inside is the experiment's own file
    (exp / "real.py").write_text("print('acc: 0.5')\n")
    (exp / "inside.py").symlink_to("real.py")
    p = labbox(tmp_path, "run", "--json", "-q", "--python", PYTHON, "--runs-dir", runs,
               "--entry", "inside.py", exp)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["metrics"]["values"] == {"acc": 0.5}


def test_symlinks_out_of_the_experiment_are_listed_with_their_targets(tmp_path):
    data = tmp_path / "dataset.csv"
    data.write_text("x\n1\n")
    exp = make_exp(tmp_path, code="print('acc: 0.5')\n")
    (exp / "data.csv").symlink_to(data)
    (exp / "rel.csv").symlink_to("../dataset.csv")
    (exp / "same.py").symlink_to("experiment.py")
    _, r = run_json(tmp_path, exp)
    assert r["status"] == "completed", r
    man = json.load(open(os.path.join(r["run_dir"], "manifest.json")))
    assert man["files"]["data.csv"] == "symlink"  # as before
    links = man["symlinks"]
    assert links["data.csv"] == {"target": str(data), "outside": True, "resolves_to": str(data)}
    assert links["rel.csv"]["outside"] is True and links["rel.csv"]["target"] == "../dataset.csv"
    assert links["same.py"] == {"target": "experiment.py", "outside": False}


def test_mounted_data_is_fingerprinted_and_rerun_says_when_it_changed(tmp_path):
    data = tmp_path / "datasets" / "shakespeare_char"
    data.mkdir(parents=True)
    (data / "train.bin").write_bytes(b"\x01\x02" * 1000)
    (data / "meta.json").write_text('{"vocab_size": 65}')
    code = ("import json\nn = len(open('/data/train.bin', 'rb').read())\n"
            "json.dump({'ds': {'means': {'tokens': n}}}, open('final_info.json', 'w'))\n")
    exp = make_exp(tmp_path, code=code)
    _, r = run_json(tmp_path, exp, opts=("--policy", "permissive", "-v", f"{data}:/data"))
    assert r["status"] == "completed", r
    man = json.load(open(os.path.join(r["run_dir"], "manifest.json")))
    [fp] = man["data"]
    assert fp["source"] == str(data) and fp["destination"] == "/data" and fp["mode"] == "ro"
    assert fp["kind"] == "tree" and fp["files"] == 2 and fp["bytes"] == 2000 + len(b'{"vocab_size": 65}')
    assert fp["method"] == "content" and fp["digest"].startswith("sha256:")

    # unchanged data: the rerun says so
    p, doc = rerun(tmp_path, r["id"])
    assert doc["rerun"]["data"] == {"compared": 1, "changed": []}
    new = json.load(open(os.path.join(doc["run_dir"], "manifest.json")))
    assert new["data"][0]["digest"] == fp["digest"]
    # the same bytes under another mtime are the same data (content is what is hashed)
    os.utime(data / "meta.json", (1, 1))
    _, doc = rerun(tmp_path, r["id"])
    assert doc["rerun"]["data"]["changed"] == []

    # changed data, same metrics: the verdict on the metrics holds, and the data change is said
    (data / "meta.json").write_text('{"vocab_size": 66}')
    p, doc = rerun(tmp_path, r["id"])
    rr = doc["rerun"]
    assert rr["verdict"] == "match"
    [c] = rr["data"]["changed"]
    assert c["destination"] == "/data" and c["before"] == fp["digest"] and c["after"] != fp["digest"]
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "mounted data CHANGED since the original run" in p.stdout and str(data) in p.stdout


def test_mounted_data_past_the_bound_is_fingerprinted_by_metadata(tmp_path):
    data = tmp_path / "many"
    data.mkdir()
    for i in range(10001):
        (data / ("f%05d" % i)).write_bytes(b"x")
    exp = make_exp(tmp_path, code="print('acc: 1')\n")
    _, r = run_json(tmp_path, exp, opts=("-v", f"{data}:/data"))
    man = json.load(open(os.path.join(r["run_dir"], "manifest.json")))
    [fp] = man["data"]
    assert fp["files"] == 10001 and fp["method"] == "metadata" and "not contents" in fp["note"]
    assert man["data"] is not None
    _, plain = run_json(tmp_path, exp)
    assert json.load(open(os.path.join(plain["run_dir"], "manifest.json")))["data"] is None


# --- 5. a main program that ended with an uncaught exception did not complete -----------------
# The runtime gate records the exception the interpreter's top level hands to sys.excepthook
# (runtime_gate.uncaught); whatever makes the exit status 0 afterwards, the run is failed.

def test_a_traceback_then_os_exit_0_in_atexit_is_failed(tmp_path):
    """The red team's case: the evaluation crashes, an atexit handler exits 0, and run.log
    ends in the traceback; the run is failed, diagnosed from that traceback."""
    exp = make_exp(tmp_path, code=(
        "import atexit, os\n"
        "atexit.register(lambda: os._exit(0))\n"
        "print('acc: 0.5')\n"
        "raise RuntimeError('evaluation crashed')\n"))
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 1 and doc["status"] == "failed", json.dumps(doc)[:3000]
    assert doc["exit_code"] == 0  # what the process itself said, as it said it
    f = doc["failure"]
    assert f["class"] == "code_error" and f["exception"] == "RuntimeError", f
    assert "RuntimeError: evaluation crashed" in f["evidence"], f
    assert "exited with status 0" in f["summary"], f
    assert any(e.startswith("runtime gate: the main program ended with an uncaught "
                            "RuntimeError: evaluation crashed (experiment.py line 4)")
               for e in f["evidence"]), f
    assert f["code_location"]["file"] == "experiment.py" and f["code_location"]["line"] == 4
    u = doc["runtime_gate"]["uncaught"]
    assert u["exception"] == "RuntimeError" and u["message"] == "evaluation crashed", u
    assert u["file"].endswith("/experiment.py") and u["line"] == 4, u
    assert doc["runtime_gate"]["events"] == []  # no refusal: a record of its own
    # what it printed before is kept, as a failed run's
    assert doc["metrics"]["values"] == {"acc": 0.5} and doc["partial"] is True
    res = json.load(open(os.path.join(doc["run_dir"], "result.json")))
    assert res["status"] == "failed" and res["failure"]["exception"] == "RuntimeError"
    rows = json.loads(labbox(tmp_path, "runs", "list", "--json").stdout)["runs"]
    assert [r["status"] for r in rows] == ["failed"], rows


HIDDEN = {
    # a sys.excepthook of its own that prints nothing, then os._exit(0) at exit
    "swallowing_hook": ("import atexit, os, sys\n"
                        "sys.excepthook = lambda *a: None\n"
                        "atexit.register(lambda: os._exit(0))\n"
                        "raise RuntimeError('hidden')\n", "RuntimeError", 0, 4),
    # a hook that exits 0 itself, before anything is printed
    "exiting_hook": ("import os, sys\n"
                     "sys.excepthook = lambda *a: os._exit(0)\n"
                     "raise RuntimeError('hidden')\n", "RuntimeError", 0, 3),
    # no hook at all, and a KeyboardInterrupt: still the main program's end
    "deleted_hook": ("import atexit, os, sys\n"
                     "del sys.excepthook\n"
                     "atexit.register(lambda: os._exit(0))\n"
                     "raise KeyboardInterrupt\n", "KeyboardInterrupt", 0, 4),
    # a thread the interpreter waits for at exit exits 0
    "thread_exits": ("import os, threading, time\n"
                     "threading.Thread(target=lambda: (time.sleep(0.3), os._exit(0))).start()\n"
                     "raise RuntimeError('hidden')\n", "RuntimeError", 0, 3),
    # a finalizer run at the interpreter's end exits 0
    "finalizer_exits": ("import os\n"
                        "class Late:\n"
                        "    def __del__(self, _exit=os._exit):  # os may be gone by then\n"
                        "        _exit(0)\n"
                        "late = Late()\n"
                        "raise RuntimeError('hidden')\n", "RuntimeError", 0, 6),
    # sys.exit(0) in an atexit handler leaves status 1, and its SystemExit printed last is
    # not why the run failed
    "sys_exit_in_atexit": ("import atexit, sys\n"
                           "atexit.register(lambda: sys.exit(0))\n"
                           "raise RuntimeError('hidden')\n", "RuntimeError", 1, 3),
}


@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_an_uncaught_exception_hidden_by_the_experiment_fails_the_run(tmp_path, case):
    code, exc, status, line = HIDDEN[case]
    exp = make_exp(tmp_path, code="print('acc: 0.5')\n" + code)
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 1 and doc["status"] == "failed", json.dumps(doc)[:3000]
    assert doc["exit_code"] == status, doc["exit_code"]
    f = doc["failure"]
    assert f["class"] == "code_error" and f["exception"] == exc, f
    assert f["code_location"]["file"] == "experiment.py", f
    assert f["code_location"]["line"] == line + 1, f
    u = doc["runtime_gate"]["uncaught"]
    assert u["exception"] == exc and u["line"] == line + 1, u


def test_an_exception_a_finally_ends_with_os_exit_0_is_not_seen(tmp_path):
    """os._exit(0) in a finally (or an except) ends the process while the exception is still
    on its way up: the interpreter never calls sys.excepthook, and nothing tells this from a
    program that handled its error and chose to exit 0. So it stays completed, and no
    uncaught exception is claimed (docs/result-json.md says the gate sees only what reaches
    the top)."""
    exp = make_exp(tmp_path, code=(
        "import os\n"
        "print('acc: 0.5')\n"
        "try:\n"
        "    raise RuntimeError('on its way up')\n"
        "finally:\n"
        "    os._exit(0)\n"))
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 0 and doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["runtime_gate"]["uncaught"] is None


STAYS = {
    "plain": "print('acc: 0.5')\n",
    "system_exit_0": "print('acc: 0.5')\nraise SystemExit(0)\n",
    "sys_exit_none": "import sys\nprint('acc: 0.5')\nsys.exit()\n",
    # the event's name raised by the code itself is no end of the main program
    "audit_forged": ("import sys\n"
                     "sys.audit('sys.excepthook', None, RuntimeError, RuntimeError('x'), None)\n"
                     "print('acc: 0.5')\n"),
}


@pytest.mark.parametrize("case", sorted(STAYS))
def test_a_run_that_ended_well_stays_completed(tmp_path, case):
    exp = make_exp(tmp_path, code=STAYS[case])
    p, doc = run_json(tmp_path, exp)
    assert p.returncode == 0 and doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["failure"] is None and doc["runtime_gate"]["uncaught"] is None
    assert doc["metrics"]["values"] == {"acc": 0.5}


def test_a_threads_or_a_forked_childs_exception_is_not_the_main_programs(tmp_path):
    """A thread's uncaught exception goes to threading.excepthook, a forked child's ends the
    child: the main program goes on and exits 0. Completed, with worker_exception for the
    thread, and no uncaught exception of the main program. The forked child's traceback is
    the output's last: exception_caught_at_end says so, and that a process the code started
    may have printed it (the code forks)."""
    exp = make_exp(tmp_path, code=(
        "import os, threading\n"
        "print('acc: 0.5', flush=True)\n"
        "t = threading.Thread(target=lambda: 1 / 0)\n"
        "t.start(); t.join()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    raise ValueError('in the forked child')\n"
        "os.waitpid(pid, 0)\n"))
    p, doc = run_json(tmp_path, exp, opts=("--policy", "permissive"))
    assert p.returncode == 0 and doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["runtime_gate"]["installed"] is True
    assert doc["runtime_gate"]["uncaught"] is None
    assert [w["kind"] for w in doc["diagnosis_warnings"]] == \
        ["worker_exception", "exception_caught_at_end"], doc
    w = doc["diagnosis_warnings"][1]
    assert "ValueError: in the forked child" in w["message"], w
    assert "or a process it started died of it" in w["message"], w


def test_an_interpreter_the_run_starts_is_not_the_main_program(tmp_path):
    """A helper script run by subprocess (`python3 fast_tok.py`) that dies of an exception is
    the run's child, not its main program: the main program handled its failure and exited
    0, so the run is completed and no uncaught exception is claimed. The child cannot become
    the main program by its environment either: LABBOX_GATE_MAIN is gone from the main
    program's by the time its code runs."""
    exp = make_exp(tmp_path, code=(
        "import os, subprocess, sys\n"
        "assert 'LABBOX_GATE_MAIN' not in os.environ\n"
        "r = subprocess.run([sys.executable, 'fast_tok.py'], capture_output=True, text=True)\n"
        "if r.returncode:\n"
        "    print('fast tokenizer unavailable, using the slow one')\n"
        "r = subprocess.run([sys.executable, 'fast_tok.py'], env=dict(os.environ, X='1'))\n"
        "print('acc: 0.5')\n"),
        files={"fast_tok.py": "import os\n"
                              "assert 'LABBOX_GATE_MAIN' not in os.environ\n"
                              "raise ImportError('fast tokenizer extension not built')\n"})
    p, doc = run_json(tmp_path, exp, opts=("--policy", "permissive"))
    assert p.returncode == 0 and doc["status"] == "completed", json.dumps(doc)[:3000]
    assert doc["runtime_gate"]["installed"] is True
    assert doc["runtime_gate"]["uncaught"] is None, doc["runtime_gate"]
    assert doc["metrics"]["values"] == {"acc": 0.5}
