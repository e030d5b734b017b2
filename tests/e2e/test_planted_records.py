"""Records labbox did not write, planted in an experiment's .labbox/ (a committed index, run
directories, sweeps made elsewhere): `runs list` marks them, `report` refuses them.

The planted index is written by hand with sqlite3, in the schema of an index one real labbox
run made; the user's own records are sealed with the user's key (XDG_STATE_HOME/labbox), the
planter's sweep with another's."""
import json
import os
import sqlite3

import pytest

from conftest import PYTHON, labbox, write_exp, user_dirs

FORGED = "20260101-000000-forged01"


def env_of(tmp_path, name):
    return user_dirs(tmp_path / name)


def planted_exp(tmp_path):
    """An experiment that arrives with .labbox/: an index whose row FORGED claims a completed
    run with score 0.99 (its run directory hand-written too), and a trigger that rewrites every
    metric written into the index afterwards, the user's own runs' included."""
    mine = env_of(tmp_path, "my-cache")
    # The schema of a real index, from one real run elsewhere.
    scratch = write_exp(tmp_path, 'print("score: 0.5")\n', name="scratch")
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=scratch, env=mine)
    assert p.returncode == 0, p.stderr
    real = json.loads(p.stdout)
    con = sqlite3.connect(scratch / ".labbox" / "labbox.db")
    schema = [s for (s,) in con.execute(
        "select sql from sqlite_master where sql is not null and name not like 'sqlite_%'")]
    con.close()

    exp = write_exp(tmp_path, 'print("score: 0.25")\n')
    runs = exp / ".labbox" / "runs"
    (runs / FORGED).mkdir(parents=True)
    result = json.load(open(os.path.join(real["run_dir"], "result.json")))
    manifest = json.load(open(os.path.join(real["run_dir"], "manifest.json")))
    result.update(id=FORGED, run_dir=f".labbox/runs/{FORGED}", status="completed",
                  metrics={"score": 0.99})
    manifest["id"] = FORGED
    (runs / FORGED / "result.json").write_text(json.dumps(result))
    (runs / FORGED / "manifest.json").write_text(json.dumps(manifest))
    con = sqlite3.connect(exp / ".labbox" / "labbox.db")
    for s in schema:
        con.execute(s)
    con.execute("insert into runs (id, run_dir, expdir, status, started_at, ended_at, exit_code,"
                " labbox_exit_code, wall_s) values (?,?,?,?,?,?,?,?,?)",
                (FORGED, f".labbox/runs/{FORGED}", str(exp), "completed",
                 "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:09.000Z", 0, 0, 9.0))
    con.execute("insert into metrics (run_id, condition, name, value) values (?, '', 'score', 0.99)",
                (FORGED,))
    con.execute("create trigger lift after insert on metrics begin"
                " update metrics set value = 0.999 where rowid = new.rowid; end")
    con.commit()
    con.close()
    # The user's own run of it, recorded in the index that came with it.
    p = labbox("run", "--json", "-q", "--python", PYTHON, ".", cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    return exp, mine, json.loads(p.stdout)["id"]


def test_runs_list_marks_a_planted_row_and_no_trigger_rewrites_the_users_own(tmp_path):
    exp, mine, own = planted_exp(tmp_path)
    p = labbox("runs", "list", "--json", cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rows = {r["id"]: r for r in doc["runs"]}
    assert set(rows) == {FORGED, own}
    assert rows[FORGED]["record_sealed"] is False
    assert rows[own]["record_sealed"] is True and doc["unsealed"] == 1
    # The planted trigger never fired on the user's own metrics.
    assert rows[own]["metrics"]["score"] == 0.25, rows[own]["metrics"]

    p = labbox("runs", "list", cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "SEALED" in lines[0]
    forged = next(line for line in lines if line.startswith(FORGED))
    mine_line = next(line for line in lines if line.startswith(own))
    assert " NO " in forged and " yes " in mine_line, p.stdout
    assert "1 run is marked NO under SEALED" in p.stdout and ".labbox/" in p.stdout

    # runs show agrees: the planted row is not sealed even though its files are well formed.
    p = labbox("runs", "show", "--json", FORGED, cwd=exp, env=mine)
    assert json.loads(p.stdout)["record_sealed"] is False


def test_a_row_pointing_at_the_users_own_run_directory_is_not_that_run(tmp_path):
    """A planted row that names a real, sealed run directory under another id is not sealed:
    the seal vouches for that run, not for the row."""
    exp, mine, own = planted_exp(tmp_path)
    con = sqlite3.connect(exp / ".labbox" / "labbox.db")
    own_dir = con.execute("select run_dir from runs where id = ?", (own,)).fetchone()[0]
    con.execute("insert into runs (id, run_dir, status) values ('borrowed-0001', ?, 'completed')",
                (own_dir,))
    con.commit()
    con.close()
    p = labbox("runs", "list", "--json", cwd=exp, env=mine)
    rows = {r["id"]: r for r in json.loads(p.stdout)["runs"]}
    assert rows["borrowed-0001"]["record_sealed"] is False and rows[own]["record_sealed"] is True
    p = labbox("report", "--format", "csv", "borrowed-0001", cwd=exp, env=mine)
    assert p.returncode == 2 and "borrowed-0001" in p.stderr, p.stderr


def test_report_refuses_a_planted_run_and_names_it(tmp_path):
    exp, mine, own = planted_exp(tmp_path)
    for fmt in ("md", "csv"):
        p = labbox("report", "--format", fmt, FORGED, cwd=exp, env=mine)
        assert p.returncode == 2, (p.returncode, p.stdout)
        assert FORGED in p.stderr and "not recorded by this user's labbox" in p.stderr
        assert "0.99" not in p.stdout
        p = labbox("report", "--format", fmt, own, FORGED, cwd=exp, env=mine)
        assert p.returncode == 2 and FORGED in p.stderr and p.stdout == ""
        p = labbox("report", "--format", fmt, own, cwd=exp, env=mine)
        assert p.returncode == 0 and "0.25" in p.stdout, p.stderr
    p = labbox("report", "--json", "-o", tmp_path / "r.md", FORGED, cwd=exp, env=mine)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["schema"] == "labbox.error/1"
    assert FORGED in doc["error"]["message"] and not (tmp_path / "r.md").exists()


def test_report_refuses_a_sweep_another_labbox_wrote(tmp_path):
    """A sweeps/ directory that came with the experiment (a real sweep of someone else's
    labbox, its statistics then edited) does not feed a report; the user's own sweep does."""
    mine, other = env_of(tmp_path, "my-cache"), env_of(tmp_path, "other-cache")
    exp = write_exp(tmp_path, "import sys\nprint('score: 0.25')\n")
    args = ("sweep", "--json", "--python", PYTHON, "--seeds", "0-1", "--jobs", "2", ".")
    p = labbox(*args, cwd=exp, env=other)
    assert p.returncode == 0, p.stderr
    theirs = json.loads(p.stdout)["id"]
    sj = exp / ".labbox" / "sweeps" / theirs / "sweep.json"
    text = sj.read_text()
    assert "0.25" in text
    sj.write_text(text.replace("0.25", "0.99"))
    p = labbox("report", "--format", "md", theirs, cwd=exp, env=mine)
    assert p.returncode == 2 and theirs in p.stderr and "0.99" not in p.stdout, p.stderr
    p = labbox("report", "--format", "csv", str(sj), cwd=exp, env=mine)
    assert p.returncode == 2 and "sweep.json" in p.stderr
    # Its cells' runs, named beside another sweep, are refused as runs too.
    p = labbox(*args, cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    ours = json.loads(p.stdout)["id"]
    p = labbox("report", "--format", "md", ours, cwd=exp, env=mine)
    assert p.returncode == 0 and "0.25" in p.stdout, p.stderr
    sj.write_text(text)
    p = labbox("report", "--format", "md", ours, theirs, cwd=exp, env=mine)
    assert p.returncode == 2, p.stdout


@pytest.mark.parametrize("planted_sweep_json", [True, False], ids=["sweep_json", "index_only"])
def test_a_sweep_reuses_no_cell_another_labbox_recorded(tmp_path, planted_sweep_json):
    """A sweep's id is the digest of its experiment and grid, so records that came with the
    experiment can name its cells: through a planted sweep.json, or the index alone. Such
    cells are run again, not reused (their numbers would be sealed into the user's
    sweep.json as labbox's); the user's own finished cells are still reused."""
    mine, other = env_of(tmp_path, "my-cache"), env_of(tmp_path, "other-cache")
    args = ("sweep", "--json", "--python", PYTHON, "--seeds", "0-1", "--jobs", "2", ".")
    if True:
        exp = write_exp(tmp_path, "print('score: 0.25')\n", name=f"exp-{planted_sweep_json}")
        p = labbox(*args, cwd=exp, env=other)
        assert p.returncode == 0, p.stderr
        theirs = json.loads(p.stdout)
        for cell in theirs["cells"]:
            rj = os.path.join(exp, cell["run_dir"], "result.json")
            doc = json.load(open(rj))
            doc["metrics"]["values"] = {"score": 0.99}
            json.dump(doc, open(rj, "w"))
        if not planted_sweep_json:
            (exp / ".labbox" / "sweeps" / theirs["id"] / "sweep.json").unlink()
        p = labbox(*args, cwd=exp, env=mine)
        assert p.returncode == 0, p.stderr
        ours = json.loads(p.stdout)
        assert ours["id"] == theirs["id"]
        assert ours["counts"]["reused"] == 0, (planted_sweep_json, ours["counts"])
        assert {c["run_dir"] for c in ours["cells"]}.isdisjoint(c["run_dir"] for c in theirs["cells"])
        assert "0.99" not in json.dumps(ours["conditions"])
        # The user's own cells, once recorded, are reused.
        p = labbox(*args, cwd=exp, env=mine)
        assert p.returncode == 0 and json.loads(p.stdout)["counts"]["reused"] == 2, p.stdout[-500:]


def test_export_leaves_out_a_planted_run_and_names_it(tmp_path):
    """MLflow and Sacred have no place for a mark their readers keep: a planted run is left out
    of both layouts, named on stderr and counted in the document; the user's own is exported."""
    exp, mine, own = planted_exp(tmp_path)
    p = labbox("runs", "export", "--mlflow", tmp_path / "mlruns", "--sacred", tmp_path / "sacred",
               "--json", cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["unsealed"] == 1 and [e["id"] for e in doc["left_out"]] == [FORGED], doc
    assert doc["left_out"][0]["record_sealed"] is False
    for kind in ("mlflow", "sacred"):
        assert [e["id"] for e in doc[kind]["runs"]] == [own] and doc[kind]["exported"] == 1
    assert FORGED in p.stderr and "left out of the export" in p.stderr, p.stderr
    assert "not recorded by this user's labbox" in p.stderr
    for root in (tmp_path / "mlruns", tmp_path / "sacred"):
        for dirpath, _, files in os.walk(root):
            for f in files:
                text = open(os.path.join(dirpath, f), errors="replace").read()
                assert FORGED not in text and "0.99" not in text, os.path.join(dirpath, f)
    p = labbox("runs", "export", "--sacred", tmp_path / "sacred2", cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    assert "exported 1 run to" in p.stdout and "1 run was left out of the export" in p.stdout


def test_compare_marks_the_planted_side(tmp_path):
    """Comparing is looking at two records, so a planted side is compared and marked beside
    its numbers, in text and in --json (record_sealed per side)."""
    exp, mine, own = planted_exp(tmp_path)
    p = labbox("runs", "compare", "--json", own, FORGED, cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["record_sealed"] == {"a": True, "b": False}, doc.get("record_sealed")
    p = labbox("runs", "compare", "--json", own, own, cwd=exp, env=mine)
    assert json.loads(p.stdout)["record_sealed"] == {"a": True, "b": True}
    p = labbox("runs", "compare", own, FORGED, cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    a = next(line for line in lines if line.startswith("A = "))
    b = next(line for line in lines if line.startswith("B = "))
    assert "NOT SEALED" in b and "NOT SEALED" not in a, p.stdout
    assert f"B: run '{FORGED}'" in p.stdout and "not recorded by this user's labbox" in p.stdout
    assert "not sealed: B; its numbers are only what its files say" in p.stdout


def test_explain_marks_a_planted_run(tmp_path):
    exp, mine, own = planted_exp(tmp_path)
    p = labbox("explain", "--json", FORGED, cwd=exp, env=mine)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["record_sealed"] is False
    p = labbox("explain", "--json", own, cwd=exp, env=mine)
    assert json.loads(p.stdout)["record_sealed"] is True
    p = labbox("explain", FORGED, cwd=exp, env=mine)
    assert "NOT SEALED" in p.stdout.splitlines()[1], p.stdout
    # A run directory given by path is checked by its own files.
    p = labbox("explain", "--json", exp / ".labbox" / "runs" / FORGED, cwd=exp, env=mine)
    assert json.loads(p.stdout)["record_sealed"] is False
