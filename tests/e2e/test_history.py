"""The run index and the commands over it: runs list/show/compare, rerun."""
import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import LABBOX, PYTHON

SEEDED = """
import json, random, sys
random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
for c in ("a", "b"):
    print("condition: %s" % c)
    print("score: %r" % random.random())
print("scale: %s" % (sys.argv[2] if len(sys.argv) > 2 else "1.0"))
json.dump({"done": True}, open("results.json", "w"))
"""


def labbox(cwd, *args, timeout=120):
    return subprocess.run([LABBOX, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def make_exp(tmp_path, code=SEEDED, name="exp"):
    d = tmp_path / name
    d.mkdir()
    (d / "main.py").write_text(code)
    return d


def run(tmp_path, exp, *extra):
    p = labbox(tmp_path, "run", "--json", "-q", "--python", PYTHON, str(exp), *extra)
    assert p.returncode in (0, 1, 4, 124), p.stderr
    return json.loads(p.stdout)


def runs_json(tmp_path, *args):
    p = labbox(tmp_path, "runs", "list", "--json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["runs"]


def test_the_index_wal_stays_small_over_many_runs(tmp_path):
    """Runs do not checkpoint the index at their end (that cost every run three syncs):
    their rows stay in the WAL until a run's commit passes its limit and checkpoints them.
    The WAL stays bounded (a new process reads it whole), every run is listed, and the
    database stays whole."""
    exp = make_exp(tmp_path, code='print("score: 1")\n')
    ids = [run(tmp_path, exp)["id"] for _ in range(30)]
    db = tmp_path / ".labbox" / "labbox.db"
    wal = db.with_name("labbox.db-wal")
    assert wal.stat().st_size <= 1 << 20, wal.stat().st_size
    assert db.stat().st_size > 0
    assert {r["id"] for r in runs_json(tmp_path, "--limit", "100")} == set(ids)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("select count(*) from runs").fetchone()[0] == 30
    con.close()


def test_index_is_wal_and_lists_newest_first(tmp_path):
    exp = make_exp(tmp_path)
    first = run(tmp_path, exp, "--", "1")
    second = run(tmp_path, exp, "--", "2")
    db = tmp_path / ".labbox" / "labbox.db"
    assert db.exists()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    rows = runs_json(tmp_path)
    assert [r["id"] for r in rows] == [second["id"], first["id"]]
    assert rows[0]["status"] == "completed" and rows[0]["run_dir"] == second["run_dir"]
    assert rows[0]["metrics"]["a/score"] == second["metrics"]["conditions"]["a"]["score"]
    assert first["index"]["error"] is None and first["index"]["path"] == str(db)


def test_list_filters(tmp_path):
    exp = make_exp(tmp_path)
    ok = run(tmp_path, exp, "--", "1")
    failing = make_exp(tmp_path, "raise SystemExit(3)\n", name="bad")
    bad = run(tmp_path, failing)
    assert [r["id"] for r in runs_json(tmp_path, "--status", "failed")] == [bad["id"]]
    assert [r["id"] for r in runs_json(tmp_path, "--status", "completed")] == [ok["id"]]
    score = ok["metrics"]["conditions"]["b"]["score"]
    assert [r["id"] for r in runs_json(tmp_path, "--metric", "b/score>=%r" % score)] == [ok["id"]]
    assert runs_json(tmp_path, "--metric", "b/score>%r" % score) == []
    assert [r["id"] for r in runs_json(tmp_path, "--metric", "score")] == [ok["id"]]
    assert runs_json(tmp_path, "--since", "2999-01-01") == []
    assert len(runs_json(tmp_path, "--until", "2999-01-01")) == 2
    assert len(runs_json(tmp_path, "--limit", "1")) == 1
    p = labbox(tmp_path, "runs", "list", "--metric", "score>>1")
    assert p.returncode == 2 and "--metric" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = labbox(tmp_path, "runs", "frobnicate")
    assert p.returncode == 2 and "frobnicate" in p.stderr
    # a start time as result.json writes it selects from that run on
    assert [r["id"] for r in runs_json(tmp_path, "--since", bad["started_at"])] == [bad["id"]]
    # what would silently select nothing (or everything) is refused instead
    for flag, value in (("--since", "yesterday"), ("--until", "2026-13-01"),
                        ("--since", "2026-11-29 10:00"), ("--status", "complete")):
        p = labbox(tmp_path, "runs", "list", flag, value)
        assert p.returncode == 2 and flag in p.stderr and value in p.stderr, (flag, value, p.stderr)


def test_show_by_prefix_and_unknown(tmp_path):
    exp = make_exp(tmp_path)
    r = run(tmp_path, exp)
    p = labbox(tmp_path, "runs", "show", "--json", r["id"][:-2])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["result"]["id"] == r["id"]
    assert doc["manifest"]["files"]["main.py"]
    p = labbox(tmp_path, "runs", "show", r["id"])
    assert p.returncode == 0 and r["id"] in p.stdout and "a/score" in p.stdout
    p = labbox(tmp_path, "runs", "show", "no-such-run")
    assert p.returncode == 2 and "no-such-run" in p.stderr


def test_compare_metrics_and_config(tmp_path):
    exp = make_exp(tmp_path)
    a = run(tmp_path, exp, "--", "1", "1.0")
    b = run(tmp_path, exp, "--", "1", "1.5")
    p = labbox(tmp_path, "runs", "compare", "--json", a["id"], b["id"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    m = {e["metric"]: e for e in doc["metrics"]}
    assert m["b/scale"]["a"] == 1.0 and m["b/scale"]["b"] == 1.5 and abs(m["b/scale"]["delta"] - 0.5) < 1e-12
    assert m["a/score"]["equal"] is True
    cfg = {d["key"]: d for d in doc["config"]}
    assert cfg["args"]["a"] == ["1", "1.0"] and cfg["args"]["b"] == ["1", "1.5"]
    assert doc["packages"] == [] and doc["files"] == []
    p = labbox(tmp_path, "runs", "compare", a["id"], b["id"])
    assert p.returncode == 0 and "scale" in p.stdout and "+0.5" in p.stdout


def test_rerun_deterministic_and_not(tmp_path):
    exp = make_exp(tmp_path)
    r = run(tmp_path, exp, "--", "7")
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["rerun"]["of"] == r["id"] and doc["rerun"]["metrics_match"] is True
    assert doc["rerun"]["source"] == "expdir"
    assert doc["metrics"]["conditions"] == r["metrics"]["conditions"]
    manifest = json.load(open(os.path.join(doc["run_dir"], "manifest.json")))
    assert manifest["rerun_of"] == r["id"] and manifest["config"]["args"] == ["7"]

    noisy = make_exp(tmp_path, "import os\nprint('noise: %d' % int.from_bytes(os.urandom(4), 'big'))\n",
                     name="noisy")
    n = run(tmp_path, noisy)
    p = labbox(tmp_path, "rerun", "--json", "-q", n["id"])
    doc = json.loads(p.stdout)
    assert doc["rerun"]["metrics_match"] is False
    assert [d["key"] for d in doc["rerun"]["differences"]] == ["noise"]
    p = labbox(tmp_path, "rerun", "-q", n["id"])
    assert "metrics match the original run: NO" in p.stdout


def test_rerun_compares_timings_apart(tmp_path):
    """A seeded experiment that also reports how long it took: the results match, the timing
    does not, and the verdict says so instead of calling the experiment nondeterministic."""
    exp = make_exp(tmp_path, "import os, random, time\nt = time.perf_counter()\nrandom.seed(1)\n"
                   "print('score: %f' % random.random())\n"
                   "print('fit_seconds: %.9f' % (time.perf_counter() - t + int.from_bytes(os.urandom(2), 'big') * 1e-6))\n")
    r = run(tmp_path, exp)
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)["rerun"]
    assert rr["metrics_match"] is True and rr["differences"] == []
    assert rr["metrics_match_exactly"] is False
    assert [d["key"] for d in rr["timing_differences"]] == ["fit_seconds"]
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: yes (timings compared apart: 1 differ" in p.stdout


def test_rerun_compares_results_whose_names_only_mention_time(tmp_path):
    """A time series' error and a second moment's error are results, not timings: when they
    change between runs the rerun says the metrics differ (they were taken for timings and
    set apart, and the rerun claimed a match). A real timing beside them stays apart."""
    exp = make_exp(tmp_path, "import os, random\n"
                   "random.seed(int.from_bytes(os.urandom(4), 'little'))\n"
                   "print('dataset: electricity')\n"
                   "print('time_series_mse:', random.random())\n"
                   "print('second_moment_error:', random.random())\n"
                   "print('n_series: 370')\n"
                   "print('epoch_time: %f' % random.random())\n")
    r = run(tmp_path, exp)
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)["rerun"]
    assert rr["verdict"] == "differ" and rr["metrics_match"] is False, rr
    assert sorted(d["key"] for d in rr["differences"]) == ["second_moment_error",
                                                           "time_series_mse"], rr
    assert [d["key"] for d in rr["timing_differences"]] == ["epoch_time"], rr
    assert rr["compared"] == 4 and rr["timing_compared"] == 1, rr
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: NO" in p.stdout, p.stdout


def test_rerun_compares_results_named_with_a_unit_like_suffix(tmp_path):
    """mmdetection's coco/bbox_mAP_s is AP on small objects and acc_s a student's accuracy:
    results whose last word looks like "seconds". When they change the rerun says the
    metrics differ; train_s, the time the training took, stays a timing."""
    exp = make_exp(tmp_path, "import os, random\n"
                   "random.seed(int.from_bytes(os.urandom(4), 'little'))\n"
                   "print('coco/bbox_mAP: 0.412')\n"
                   "print('coco/bbox_mAP_s:', random.random())\n"
                   "print('acc_s:', random.random())\n"
                   "print('train_s: %f' % random.random())\n")
    r = run(tmp_path, exp)
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)["rerun"]
    assert rr["verdict"] == "differ" and rr["metrics_match"] is False, rr
    assert sorted(d["key"] for d in rr["differences"]) == ["acc_s", "coco/bbox_mAP_s"], rr
    assert [d["key"] for d in rr["timing_differences"]] == ["train_s"], rr


RESULTS_THAT_DIFFER_PAST_WHAT_IS_KEPT = {
    # an array too long to keep in result.json, the middle shuffled on every run: the
    # summary (length, min, max, mean, first and last ten) is the same each time
    "long_array": "import json, random\n"
                  "p = list(range(20000)); m = p[10:-10]; random.shuffle(m); p[10:-10] = m\n"
                  "print('accuracy: 0.5')\n"
                  "json.dump({'preds': p}, open('results.json', 'w'))\n",
    # an object with too many members to keep, one value random
    "wide_object": "import json, os\n"
                   "d = {'k%d' % i: i for i in range(20000)}\n"
                   "d['k777'] = int.from_bytes(os.urandom(4), 'big')\n"
                   "print('accuracy: 0.5')\n"
                   "json.dump({'per_id': d}, open('results.json', 'w'))\n",
    # a member whose dotted path is too long to name whole
    "long_key": "import json, os\n"
                "print('accuracy: 0.5')\n"
                "json.dump({'k' * 1100: int.from_bytes(os.urandom(4), 'big')},\n"
                "          open('results.json', 'w'))\n",
}


@pytest.mark.parametrize("name", sorted(RESULTS_THAT_DIFFER_PAST_WHAT_IS_KEPT))
def test_rerun_tells_results_apart_that_the_record_keeps_in_part(tmp_path, name):
    """What result.json keeps of a results file is bounded (long arrays and wide objects
    summarised, long paths not named whole): a rerun whose files differ
    only there differs, and says where."""
    exp = make_exp(tmp_path, RESULTS_THAT_DIFFER_PAST_WHAT_IS_KEPT[name])
    r = run(tmp_path, exp)
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    rr = json.loads(p.stdout)["rerun"]
    assert rr["verdict"] == "differ" and rr["metrics_match"] is False, rr
    assert all(d["key"].startswith("results.json:") for d in rr["differences"]), rr
    p = labbox(tmp_path, "rerun", "-q", r["id"])
    assert "metrics match the original run: NO" in p.stdout, p.stdout


STAGED_COPY_TRICKS = {
    # the run leaves a FIFO where a file of the experiment was: opening it would wait
    "fifo": "import os\nprint('accuracy: 0.5')\nos.remove('helper.py')\nos.mkfifo('helper.py')\n",
    # the run swaps a directory of the experiment for a link to the host's files: what the
    # link leads to is no file of the staged copy (here /dev/zero, read without end)
    "dir_link": "import os, shutil\nprint('accuracy: 0.5')\nshutil.rmtree('d')\n"
                "os.symlink('/dev', 'd')\n",
}


@pytest.mark.parametrize("name", sorted(STAGED_COPY_TRICKS))
def test_rerun_reads_the_staged_copy_as_it_was_staged(tmp_path, name):
    """A run can change its staged copy (exp/ is its working directory): when the original
    changed too, rerun checks the staged copy before it repeats it, and what the run left
    there is a difference (exit 2, named), never waited on, never followed out."""
    exp = make_exp(tmp_path, STAGED_COPY_TRICKS[name])
    (exp / "helper.py").write_text("VALUE = 1\n")
    (exp / "d").mkdir()
    (exp / "d" / "zero").write_text("shipped\n")
    r = run(tmp_path, exp)
    assert r["status"] == "completed", r
    (exp / "main.py").write_text((exp / "main.py").read_text() + "# edited\n")
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"], timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert "staged copy" in doc["error"]["message"], doc


def test_rerun_uses_the_staged_copy_when_the_original_changed(tmp_path):
    exp = make_exp(tmp_path)
    r = run(tmp_path, exp, "--", "3")
    (exp / "main.py").write_text("print('score: 999')\n")
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["rerun"]["source"] == "staged copy" and doc["rerun"]["metrics_match"] is True
    # an experiment that rewrites its own code cannot be repeated exactly: say so
    selfmod = make_exp(tmp_path, "open(__file__, 'a').write('# changed\\n')\nprint('x: 1')\n",
                       name="selfmod")
    s = run(tmp_path, selfmod)
    (selfmod / "main.py").write_text("print('x: 2')\n")
    p = labbox(tmp_path, "rerun", "-q", s["id"])
    assert p.returncode == 2 and "main.py" in p.stderr and "cannot repeat" in p.stderr


def test_rerun_from_the_staged_copy_keeps_executable_files(tmp_path):
    """The staged copy a rerun rebuilds from keeps each file's permission bits as staging
    kept them: a helper script the experiment runs is still executable (it was 'Permission
    denied', the rerun failed), and no setuid bit comes back."""
    exp = make_exp(tmp_path, "import subprocess\n"
                   "print(subprocess.run(['./tools/helper.sh'], capture_output=True, text=True,"
                   " check=True).stdout.strip())\n")
    helper = exp / "tools" / "helper.sh"
    helper.parent.mkdir()
    helper.write_text('#!/bin/sh\necho "score: 0.5"\n')
    helper.chmod(0o4755)
    r = run(tmp_path, exp, "--policy", "permissive")
    assert r["status"] == "completed" and r["metrics"]["values"] == {"score": 0.5}, r
    (exp / "main.py").write_text("print('score: 999')\n")
    p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
    doc = json.loads(p.stdout)
    assert p.returncode == 0, (doc.get("failure"), p.stderr)
    assert doc["rerun"]["source"] == "staged copy" and doc["rerun"]["metrics_match"] is True
    assert doc["metrics"]["values"] == {"score": 0.5}
    mode = os.stat(os.path.join(doc["run_dir"], "exp", "tools", "helper.sh")).st_mode
    assert mode & 0o100 and not mode & 0o7000, oct(mode)


def test_a_rerun_that_refuses_its_interpreter_exits_2(tmp_path):
    """An interpreter of the experiment that named itself outside it is not run again; the
    refusal exits 2 with an error document (it exited 0, status ok)."""
    exp = make_exp(tmp_path, "print('score: 1')\n")
    py = exp / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text('#!/bin/sh\nexec /usr/bin/python3 "$@"\n')
    py.chmod(0o755)
    (exp / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    p = labbox(tmp_path, "run", "--json", "-q", "--python", py, str(exp))
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout)["id"]
    p = labbox(tmp_path, "rerun", "--json", "-q", rid)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["schema"] == "labbox.error/1", p.stdout
    assert "not run again" in doc["error"]["message"]


def test_index_survives_sigkill_of_labbox(tmp_path):
    exp = make_exp(tmp_path, "import time\nprint('started: 1', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([LABBOX, "run", "--python", PYTHON, str(exp)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("started")
        rows = runs_json(tmp_path)
        assert rows[0]["status"] == "running"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    rows = runs_json(tmp_path)
    assert rows[0]["status"] == "interrupted"
    con = sqlite3.connect(tmp_path / ".labbox" / "labbox.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    # the next run is recorded as usual
    ok = make_exp(tmp_path, "print('v: 1')\n", name="ok")
    r = run(tmp_path, ok)
    rows = runs_json(tmp_path)
    assert rows[0]["id"] == r["id"] and rows[0]["status"] == "completed"
    assert rows[1]["status"] == "interrupted"


def test_a_sigkilled_run_is_interrupted_and_said_to_be_unfinished(tmp_path):
    """A run whose labbox died: result.json says "running", the index "interrupted" by
    the next labbox's reaping; the two agree, so the row is not called changed. It has no
    seal (its labbox never sealed it), and it is said to be unfinished, never a record made
    elsewhere."""
    exp = make_exp(tmp_path, "import time\nprint('started: 1', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([LABBOX, "run", "--python", PYTHON, str(exp)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("started")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    (row,) = runs_json(tmp_path)
    assert row["status"] == "interrupted" and row["index_row_differs"] is False, row
    assert row["record_sealed"] is False and row["unsealed_reason"] == "unfinished", row
    text = labbox(tmp_path, "runs", "list").stdout
    assert "1 run never finished its record" in text and "made elsewhere" not in text, text
    p = labbox(tmp_path, "explain", row["id"])
    assert "never finished its record" in p.stdout, p.stdout + p.stderr
    assert "made elsewhere" not in p.stdout and "from before labbox reported" not in p.stdout, p.stdout
    p = labbox(tmp_path, "report", row["id"], "-o", str(tmp_path / "r.html"))
    assert p.returncode == 2 and "never finished its record" in p.stderr, p.stderr


def test_a_run_still_running_is_listed_as_running_not_as_made_elsewhere(tmp_path):
    exp = make_exp(tmp_path, "import time\nprint('started: 1', flush=True)\ntime.sleep(30)\n")
    proc = subprocess.Popen([LABBOX, "run", "--python", PYTHON, str(exp)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("started")
        (row,) = runs_json(tmp_path)
        assert row["status"] == "running" and row["record_sealed"] is False, row
        assert row["unsealed_reason"] == "running", row
        doc = json.loads(labbox(tmp_path, "runs", "list", "--json").stdout)
        assert doc["unsealed"] == 1 and doc["unsealed_running"] == 1, doc
        text = labbox(tmp_path, "runs", "list").stdout
        assert "1 run is still running" in text and "made elsewhere" not in text, text
        show = labbox(tmp_path, "runs", "show", row["id"]).stdout
        assert "is still running" in show and "made elsewhere" not in show, show
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_damaged_result_json_is_said_to_be_damaged_not_made_elsewhere(tmp_path):
    exp = make_exp(tmp_path, "print('accuracy: 0.9')\n")
    run(tmp_path, exp)
    (row,) = runs_json(tmp_path)
    res = tmp_path / ".labbox" / "runs" / row["id"] / "result.json"
    res.write_bytes(res.read_bytes()[:100])  # a write cut short
    show = json.loads(labbox(tmp_path, "runs", "show", "--json", row["id"]).stdout)
    assert show["result"] is None and show["record_sealed"] is False, show
    assert show["unsealed_reason"] == "unreadable", show
    assert "result.json is not JSON" in show["result_error"] and "truncated" in show["result_error"]
    text = labbox(tmp_path, "runs", "show", row["id"]).stdout
    assert "its result.json is not JSON" in text and "made elsewhere" not in text, text
    p = labbox(tmp_path, "report", row["id"], "-o", str(tmp_path / "r.html"))
    assert p.returncode == 2 and "its result.json is not JSON" in p.stderr, p.stderr
    assert "manifest.json does not match" not in p.stderr, p.stderr
    (row,) = runs_json(tmp_path)
    assert row["unsealed_reason"] == "unreadable", row
    res.unlink()
    (row,) = runs_json(tmp_path)
    assert row["unsealed_reason"] == "unreadable", row
    text = labbox(tmp_path, "runs", "show", row["id"]).stdout
    assert "its result.json is missing" in text, text


def test_an_index_locked_past_the_end_of_a_run_is_said_in_result_json(tmp_path):
    """Another process holds the index's write lock past labbox's wait when the run ends:
    the run stays completed, result.json (still sealed) says the index could not take its
    end, and `runs` marks the stale row as differing from the sealed record, never as the
    run's word."""
    exp = make_exp(tmp_path, "import time\nprint('started: 1', flush=True)\n"
                   "time.sleep(1.5)\nprint('accuracy: 0.9')\n")
    run(tmp_path, make_exp(tmp_path, "print('v: 1')\n", name="first"))  # makes the index
    proc = subprocess.Popen([LABBOX, "run", "--json", "--python", PYTHON, str(exp)],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    con = sqlite3.connect(tmp_path / ".labbox" / "labbox.db", isolation_level=None, timeout=30)
    deadline = time.time() + 30  # the run's start is in the index before its code runs
    while not con.execute("SELECT 1 FROM runs WHERE status = 'running'").fetchone():
        assert time.time() < deadline and proc.poll() is None, "the run never started"
        time.sleep(0.05)
    con.execute("BEGIN EXCLUSIVE")
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        con.execute("COMMIT")
        con.close()
        proc.kill()
    assert proc.returncode == 0, out + err
    doc = json.loads(out)
    assert doc["status"] == "completed" and "run index" in (doc["index"]["error"] or ""), doc
    res = json.loads((tmp_path / ".labbox" / "runs" / doc["id"] / "result.json").read_text())
    assert res["index"]["error"] == doc["index"]["error"], res["index"]
    p = labbox(tmp_path, "runs", "show", "--json", doc["id"])
    shown = json.loads(p.stdout)
    assert shown["index"]["status"] in ("running", "interrupted"), shown["index"]
    assert shown["index_row_differs"] is True and shown["record_sealed"] is False, shown
    assert shown["result"]["metrics"]["values"]["accuracy"] == 0.9
    p = labbox(tmp_path, "runs", "show", doc["id"])
    assert "NOT SEALED" in p.stdout and "could not record the end of the run" in p.stdout, p.stdout


def test_runs_compare_show_and_list_tell_apart_integers_past_double_precision(tmp_path):
    """Two checksums that doubles round to one number (2^53 and 2^53 + 1): runs compare says
    they differ by 1, as rerun would, and runs show and runs list --metric read them exactly."""
    exp = make_exp(tmp_path, "import sys\nprint('weights_checksum: %s' % sys.argv[1])\n")
    a = run(tmp_path, exp, "--", str(2**53))["id"]
    b = run(tmp_path, exp, "--", str(2**53 + 1))["id"]
    p = labbox(tmp_path, "runs", "compare", "--json", a, b)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    m = [e for e in doc["metrics"] if e["metric"] == "weights_checksum"][0]
    assert (m["a"], m["b"], m["delta"], m["equal"]) == (2**53, 2**53 + 1, 1, False), m
    assert doc["differ"] == 1
    p = labbox(tmp_path, "runs", "compare", a, b)
    assert "1 differ" in p.stdout and str(2**53 + 1) in p.stdout, p.stdout
    p = labbox(tmp_path, "runs", "show", "--json", b)
    assert json.loads(p.stdout)["index"]["metrics"]["weights_checksum"] == 2**53 + 1, p.stdout
    for spec, want in ((f"weights_checksum={2**53 + 1}", [b]), (f"weights_checksum>{2**53}", [b]),
                       (f"weights_checksum<{2**53 + 1}", [a]), (f"weights_checksum={2**53}", [a])):
        p = labbox(tmp_path, "runs", "list", "--json", "--metric", spec)
        assert p.returncode == 0, p.stderr
        assert [r["id"] for r in json.loads(p.stdout)["runs"]] == want, (spec, p.stdout)


def test_rerun_tells_apart_integers_that_differ_past_double_precision(tmp_path):
    """A determinism checksum printed on stdout, whose low digits differ between runs: the
    rerun is no match, though doubles round both to one number (2^63 + n and 10^20 + n for
    n < 1024 are all 2^63 and 10^20 as doubles)."""
    exp = make_exp(tmp_path, "import os\n"
                   "n = int.from_bytes(os.urandom(2), 'big') % 1023 + 1\n"
                   "print('acc: 0.5')\n"
                   "print('weights_checksum: %d' % (2**63 + n))\n"
                   "print('ids_hash: %d' % (10**20 + n))\n")
    r = run(tmp_path, exp)
    a = r["metrics"]["values"]
    assert a["weights_checksum"] - 2**63 == int(a["ids_hash"]) - 10**20, a
    for _ in range(3):  # two draws of n alike (1 in 1023) say nothing: draw again
        p = labbox(tmp_path, "rerun", "--json", "-q", r["id"])
        doc = json.loads(p.stdout)
        b = doc["metrics"]["values"]
        if b["weights_checksum"] != a["weights_checksum"]:
            break
    assert b["weights_checksum"] != a["weights_checksum"], (a, b)
    assert doc["rerun"]["metrics_match"] is False, doc["rerun"]
    assert doc["rerun"]["verdict"] != "match"
    assert sorted(d["key"] for d in doc["rerun"]["differences"]) == ["ids_hash", "weights_checksum"]


def test_a_one_element_array_of_a_number_is_indexed_as_that_number(tmp_path):
    # R's jsonlite::write_json(list(acc = 0.9)) writes {"acc": [0.9]}: the run is found by
    # `acc`, the name the researcher wrote, not by `acc.0`. Longer arrays keep their indices.
    exp = make_exp(tmp_path, "import json\n"
                   "json.dump({'acc': [0.9], 'f1': [0.8], 'seeds': [0.7, 0.75]},"
                   " open('results.json', 'w'))\n")
    r = run(tmp_path, exp)
    assert r["status"] == "completed", r
    assert [x["id"] for x in runs_json(tmp_path, "--metric", "acc>0.5")] == [r["id"]]
    (row,) = runs_json(tmp_path)
    assert row["metrics"] == {"acc": 0.9, "f1": 0.8, "seeds.0": 0.7, "seeds.1": 0.75}, row
