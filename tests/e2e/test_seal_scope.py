"""The seal covers what readers show: a run's result.json (status, metrics) and a sweep's
whole sweep.json (cells, statistics), not only manifest.json and the sweep's invocation and
plan. An edited record is refused by `report` and marked NOT SEALED by the readers that
show it; an untouched one, a resumed sweep, and a record an older labbox sealed (manifest
only, said as such) still read."""
import hashlib
import hmac
import json
import os
from pathlib import Path

from conftest import PYTHON, labbox, write_exp, user_dirs

FAILING = 'import sys\nprint("accuracy: 0.5")\nsys.exit(3)\n'


def env_of(tmp_path):
    return user_dirs(tmp_path / "cache")


def failed_run(tmp_path):
    env = env_of(tmp_path)
    exp = write_exp(tmp_path, FAILING, yaml="metrics: [accuracy]\n")
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=exp, env=env)
    assert p.returncode != 0 and p.returncode != 2, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["status"] != "completed" and doc["result_mac"], doc
    return exp, env, doc["id"], Path(doc["run_dir"])


def forge_completed(run_dir):
    rj = run_dir / "result.json"
    res = json.loads(rj.read_text())
    res["status"] = "completed"
    res["metrics"] = {"accuracy": 0.97}
    rj.write_text(json.dumps(res, indent=2))


def test_untouched_run_reads_as_sealed_whole(tmp_path):
    exp, env, rid, _ = failed_run(tmp_path)
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    doc = json.loads(p.stdout)
    assert doc["record_sealed"] is True, doc
    assert doc["seal_scope"] == "manifest.json+result.json", doc
    p = labbox("report", "--format", "md", rid, cwd=exp, env=env)
    assert p.returncode == 0, p.stderr
    assert "older labbox" not in p.stderr, p.stdout + p.stderr
    p = labbox("runs", "list", cwd=exp, env=env)
    assert " yes " in p.stdout, p.stdout


def test_edited_result_json_is_refused_by_report_and_marked_by_readers(tmp_path):
    """A failed run (accuracy 0.5) whose result.json is edited to completed at 0.97."""
    exp, env, rid, run_dir = failed_run(tmp_path)
    forge_completed(run_dir)
    for fmt in ("md", "csv", "html"):
        p = labbox("report", "--format", fmt, rid, cwd=exp, env=env)
        assert p.returncode == 2, (fmt, p.stdout, p.stderr)
        assert rid in p.stderr and "result.json" in p.stderr, p.stderr
        assert "0.97" not in p.stdout, p.stdout
    p = labbox("report", "--json", "-o", tmp_path / "r.md", rid, cwd=exp, env=env)
    assert p.returncode == 2 and json.loads(p.stdout)["schema"] == "labbox.error/1", p.stdout
    p = labbox("runs", "show", rid, cwd=exp, env=env)
    assert "NOT SEALED" in p.stdout and "result.json was changed" in p.stdout, p.stdout
    doc = json.loads(labbox("runs", "show", "--json", rid, cwd=exp, env=env).stdout)
    assert doc["record_sealed"] is False and doc["seal_scope"] is None, doc
    doc = json.loads(labbox("runs", "list", "--json", cwd=exp, env=env).stdout)
    assert doc["unsealed"] == 1 and doc["runs"][0]["record_sealed"] is False, doc
    p = labbox("runs", "list", cwd=exp, env=env)
    assert " NO " in p.stdout, p.stdout
    doc = json.loads(labbox("explain", "--json", rid, cwd=exp, env=env).stdout)
    assert doc["record_sealed"] is False, doc
    # rerun treats it as a record changed since: what it grants (--python) is not repeated
    # without --accept-grants, and with it the comparison says record_sealed false
    p = labbox("rerun", "--json", "-q", rid, cwd=exp, env=env)
    assert p.returncode == 2 and "result.json does not match its seal" in p.stderr, p.stderr
    p = labbox("rerun", "--json", "-q", "--accept-grants", rid, cwd=exp, env=env)
    assert json.loads(p.stdout)["rerun"]["record_sealed"] is False, p.stdout


def test_deleting_result_mac_does_not_pass_for_an_older_record(tmp_path):
    exp, env, rid, run_dir = failed_run(tmp_path)
    rj = run_dir / "result.json"
    res = json.loads(rj.read_text())
    del res["result_mac"]
    res["metrics"] = {"accuracy": 0.97}
    rj.write_text(json.dumps(res))
    p = labbox("report", "--format", "md", rid, cwd=exp, env=env)
    assert p.returncode == 2 and "0.97" not in p.stdout, p.stdout + p.stderr


def test_a_record_an_older_labbox_sealed_is_read_and_said_to_be(tmp_path):
    """An older labbox sealed manifest.json only (no result_sealed in it, no result_mac):
    read as before, marked as sealed by the older scope, not as changed."""
    exp, env, rid, run_dir = failed_run(tmp_path)
    man = json.loads((run_dir / "manifest.json").read_text())
    del man["result_sealed"]
    mbytes = json.dumps(man, indent=2).encode()
    (run_dir / "manifest.json").write_bytes(mbytes)
    key = (tmp_path / "cache-state" / "labbox" / "record.key").read_bytes()
    res = json.loads((run_dir / "result.json").read_text())
    del res["result_mac"]
    res["manifest_mac"] = hmac.new(key, b"manifest.json\n" + mbytes, hashlib.sha256).hexdigest()
    (run_dir / "result.json").write_text(json.dumps(res, indent=2))
    doc = json.loads(labbox("runs", "show", "--json", rid, cwd=exp, env=env).stdout)
    assert doc["record_sealed"] is True and doc["seal_scope"] == "manifest.json", doc
    p = labbox("runs", "show", rid, cwd=exp, env=env)
    assert "sealed by an older labbox" in p.stdout and "NOT SEALED" not in p.stdout, p.stdout
    assert " old " in labbox("runs", "list", cwd=exp, env=env).stdout
    p = labbox("report", "--format", "md", rid, cwd=exp, env=env)
    assert p.returncode == 0 and "older labbox" in p.stderr, p.stdout + p.stderr


SWEEP_MAIN = ("import argparse\na = argparse.ArgumentParser(); a.add_argument('--lr');"
              " a.add_argument('--seed'); a.parse_args()\nprint('accuracy: 0.5')\n")
SWEEP_YAML = "metrics: [accuracy]\nsweep:\n  parameters:\n    lr: [0.1]\n  seeds: [0, 1]\n"


def sweep(tmp_path):
    env = env_of(tmp_path)
    exp = write_exp(tmp_path, SWEEP_MAIN, yaml=SWEEP_YAML)
    p = labbox("sweep", "--json", "--python", PYTHON, ".", cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    sid = json.loads(p.stdout)["id"]
    return exp, env, sid, exp / ".labbox" / "sweeps" / sid / "sweep.json"


def test_edited_sweep_statistics_are_refused(tmp_path):
    exp, env, sid, sj = sweep(tmp_path)
    p = labbox("report", "--format", "md", sid, cwd=exp, env=env)
    assert p.returncode == 0 and "0.5" in p.stdout, p.stdout + p.stderr
    d = json.loads(sj.read_text())
    m = d["conditions"][0]["metrics"]["accuracy"]
    m.update(mean=0.97, min=0.96, max=0.98, std=0.01)
    for c in d["cells"]:
        c["metrics"]["accuracy"] = 0.97
    sj.write_text(json.dumps(d))
    for fmt in ("md", "csv", "html"):
        p = labbox("report", "--format", fmt, sid, cwd=exp, env=env)
        assert p.returncode == 2, (fmt, p.stdout, p.stderr)
        assert sid in p.stderr and "0.97" not in p.stdout, p.stdout + p.stderr


def test_a_resumed_sweep_reads_as_sealed(tmp_path):
    exp, env, sid, sj = sweep(tmp_path)
    before = json.loads(sj.read_text())["seal"]
    p = labbox("sweep", "--json", "--resume", sid, cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(sj.read_text())["seal"] != before  # rewritten (updated_at), resealed
    p = labbox("report", "--format", "md", sid, cwd=exp, env=env)
    assert p.returncode == 0 and "0.5" in p.stdout and "older" not in p.stderr, p.stderr


RICH = '''import json
print("condition=baseline accuracy: 0.40")
print("condition=proposed accuracy: 0.44")
print("accuracy: 0.42")
print("loss: 1.5")
json.dump({"final": {"acc": 0.42, "hist": [1, 2, 3]}, "name": "x"}, open("results.json", "w"))
'''


def index_of(exp):
    return exp / ".labbox" / "labbox.db"


def test_an_index_row_that_differs_from_its_sealed_record_is_listed_as_the_record_says(tmp_path):
    """The index is outside the seal: a row whose status or metrics were changed there (by
    anything that can write the user's files) is not taken as labbox's word: `runs list`
    lists and filters it as its sealed result.json says (and says so), `show`, `compare` and
    `export` mark it; rows that say what their sealed result.json says (plain, condition and
    file metrics, a sweep's cells) stay sealed."""
    import sqlite3
    env = env_of(tmp_path)
    exp = write_exp(tmp_path, RICH)
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rid = json.loads(p.stdout)["id"]
    p = labbox("sweep", "--json", "--jobs", "1", "--seeds", "0-1", "--python", PYTHON, ".",
               cwd=exp, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    p = labbox("runs", "list", "--json", cwd=exp, env=env)
    rows = json.loads(p.stdout)["runs"]
    assert len(rows) == 3, rows
    assert all(r["record_sealed"] and not r["index_row_differs"] for r in rows), rows
    last = rows[-1]["metrics"]
    assert any(r["sweep"] for r in rows) and "final.acc" in last and "baseline/accuracy" in last, rows

    with sqlite3.connect(index_of(exp)) as db:
        db.execute("UPDATE metrics SET value = 0.99 WHERE run_id = ? AND name = 'accuracy'"
                   " AND condition = ''", (rid,))
    # `runs list` lists and filters such a row as its sealed record says (0.42), and says so
    p = labbox("runs", "list", "--json", "--metric", "accuracy>0.9", cwd=exp, env=env)
    doc = json.loads(p.stdout)
    assert doc["runs"] == [] and doc["rows_from_records"] == 1, doc
    p = labbox("runs", "list", "--json", "--metric", "accuracy<0.5", cwd=exp, env=env)
    row = next(r for r in json.loads(p.stdout)["runs"] if r["id"] == rid)
    assert row["record_sealed"] is True and row["index_row_differs"] is True, row
    assert row["metrics"]["accuracy"] == 0.42, row["metrics"]
    p = labbox("runs", "list", "--metric", "accuracy>0.9", cwd=exp, env=env)
    assert rid not in p.stdout and "differs from its sealed result.json" in p.stdout, p.stdout
    assert "listed and filtered as its record says, 0 of them here" in p.stdout, p.stdout
    p = labbox("runs", "list", cwd=exp, env=env)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith(rid))
    assert " yes " in line and "accuracy=0.42" in line and "0.99" not in p.stdout, p.stdout
    with sqlite3.connect(index_of(exp)) as db:  # listed from the record, the file untouched
        assert db.execute("SELECT value FROM metrics WHERE run_id = ? AND name = 'accuracy'"
                          " AND condition = ''", (rid,)).fetchone()[0] == 0.99
    p = labbox("runs", "show", rid, cwd=exp, env=env)
    assert "NOT SEALED" in p.stdout and "run index differs" in p.stdout, p.stdout
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    doc = json.loads(p.stdout)
    assert doc["record_sealed"] is False and doc["index_row_differs"] is True, doc
    assert doc["result"]["metrics"]["values"]["accuracy"] == 0.42, doc["result"]["metrics"]
    other = next(r["id"] for r in json.loads(
        labbox("runs", "list", "--json", cwd=exp, env=env).stdout)["runs"] if r["id"] != rid)
    p = labbox("runs", "compare", rid, other, cwd=exp, env=env)
    assert "NOT SEALED" in p.stdout.splitlines()[0], p.stdout

    # A status changed in the index, the metrics put back: still not sealed.
    with sqlite3.connect(index_of(exp)) as db:
        db.execute("UPDATE metrics SET value = 0.42 WHERE run_id = ? AND name = 'accuracy'"
                   " AND condition = ''", (rid,))
        db.execute("UPDATE runs SET status = 'failed', wall_s = 1234 WHERE id = ?", (rid,))
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    assert json.loads(p.stdout)["index_row_differs"] is True, p.stdout
    p = labbox("runs", "list", "--json", "--status", "failed", cwd=exp, env=env)
    assert json.loads(p.stdout)["runs"] == [], p.stdout
    p = labbox("runs", "list", "--json", "--status", "completed", cwd=exp, env=env)
    assert rid in [r["id"] for r in json.loads(p.stdout)["runs"]], p.stdout
    with sqlite3.connect(index_of(exp)) as db:
        db.execute("UPDATE runs SET status = 'completed' WHERE id = ?", (rid,))
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    assert json.loads(p.stdout)["index_row_differs"] is True, p.stdout  # wall_s still 1234
    # An export writes the row's status and times: such a row is left out, named.
    p = labbox("runs", "export", "--mlflow", tmp_path / "mlruns", cwd=exp, env=env)
    assert p.returncode == 0 and "left out of the export" in p.stderr and rid in p.stderr, \
        p.stdout + p.stderr
    assert not any((tmp_path / "mlruns").rglob(f"*{rid}*")), list((tmp_path / "mlruns").rglob("*"))
    # Only the start time changed, everything else as recorded: not sealed either.
    rj = json.loads((exp / ".labbox" / "runs" / rid / "result.json").read_text())
    with sqlite3.connect(index_of(exp)) as db:
        db.execute("UPDATE runs SET wall_s = ?, started_at = '2020-01-01T00:00:00.000Z'"
                   " WHERE id = ?", (rj["resources"]["wall_s"], rid))
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    assert json.loads(p.stdout)["index_row_differs"] is True, p.stdout
    with sqlite3.connect(index_of(exp)) as db:
        db.execute("UPDATE runs SET started_at = ? WHERE id = ?", (rj["started_at"], rid))
    p = labbox("runs", "show", "--json", rid, cwd=exp, env=env)
    doc = json.loads(p.stdout)
    assert doc["index_row_differs"] is False and doc["record_sealed"] is True, doc["index"]
