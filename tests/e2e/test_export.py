"""`labbox runs export --mlflow DIR` and `--sacred DIR`, checked field by field.

The MLflow side is read back the way MLflow's FileStore reads it (mlflow/store/tracking/
file_store.py): meta.yaml through yaml.safe_load with the keys and types FileStore writes,
metric files as "<timestamp> <value> <step>" lines, params and tags as bare files, names that
pass MLflow's validation. The Sacred side is read the way FileStorageObserver writes it
(sacred/observers/file_storage.py): numbered run folders with config.json, run.json,
metrics.json, info.json and cout.txt, and sources stored once under _sources/<stem>_<md5><ext>.
"""
import datetime
import hashlib
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with Debian's python3
    yaml = None

# A name with everything YAML cares about: a colon-space, quotes and a hash.
ODD_NAME = "exp: 'q\" #x"

COMPLETED = """
import random
random.seed(1)
for c in ("a", "b"):
    print("condition: %s" % c)
    print("acc: %r" % random.random())
print("note: hello")
print("condition: lr=0.1")
print("acc: 0.5")
print("tiny: 1e-05")
"""
FAILED = "print('acc: 0.25')\nraise SystemExit(3)\n"
NAN = "print('loss: nan')\nprint('big: inf')\nprint('acc: 0.75')\n"
TIMEOUT = "import time\nprint('acc: 0.125', flush=True)\ntime.sleep(60)\n"

MLFLOW_STATUS = {"completed": 3, "failed": 4, "invalid_metrics": 4, "timeout": 5,
                 "interrupted": 5, "running": 1}
SACRED_STATUS = {"completed": "COMPLETED", "failed": "FAILED", "invalid_metrics": "FAILED",
                 "timeout": "TIMEOUT", "interrupted": "INTERRUPTED", "running": "RUNNING"}
RUN_META_KEYS = {"artifact_uri", "end_time", "entry_point_name", "experiment_id",
                 "lifecycle_stage", "run_id", "run_name", "run_uuid", "source_name",
                 "source_type", "source_version", "start_time", "status", "tags", "user_id"}
EXP_META_KEYS = {"artifact_location", "creation_time", "experiment_id", "last_update_time",
                 "lifecycle_stage", "name"}
# mlflow/utils/validation.py: names of metrics, params and tags.
MLFLOW_NAME = re.compile(r"^[/\w.\- ]*$")


def labbox(cwd, *args, timeout=120):
    return subprocess.run([LABBOX, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def make_exp(root, name, code):
    d = Path(root) / name
    d.mkdir()
    (d / "main.py").write_text(code)
    return d


def iso_ms(text):
    dt = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int(round(dt.timestamp() * 1000))


def read_yaml(path):
    text = Path(path).read_text()
    if yaml is not None:
        return yaml.safe_load(text)
    pytest.skip("PyYAML is not installed")


def tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def flat_metrics(result):
    out = {}
    m = result["metrics"]
    out.update(m["values"])
    for cond, group in m["conditions"].items():
        for k, v in group.items():
            out["%s/%s" % (cond, k)] = v
    return out


def as_float(v):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v)


def same_number(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Four real runs in one working directory: completed (conditions, a string metric, a
    condition name MLflow refuses, an odd experiment name), failed, NaN/Inf, timeout."""
    root = tmp_path_factory.mktemp("export")
    runs = {}
    for key, name, code, extra, rc in [
        ("completed", ODD_NAME, COMPLETED, [], 0),
        ("failed", "failing", FAILED, [], 1),
        ("nan", "nan exp", NAN, [], 4),
        ("timeout", "slow", TIMEOUT, ["--budget", "1", "--grace", "0.5"], 124),
    ]:
        exp = make_exp(root, name, code)
        p = labbox(root, "run", "--json", "-q", "--python", PYTHON, *extra, exp)
        assert p.returncode == rc, (key, p.returncode, p.stderr[-2000:])
        doc = json.loads(p.stdout)
        runs[key] = {"result": doc, "exp": exp, "run_dir": Path(doc["run_dir"])}
    assert runs["nan"]["result"]["status"] == "invalid_metrics"
    assert runs["timeout"]["result"]["status"] == "timeout"
    return root, runs


@pytest.fixture(scope="module")
def exported(lab):
    root, runs = lab
    p = labbox(root, "runs", "export", "--mlflow", "mlruns", "--sacred", "sacred", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    return root, runs, doc


def run_uuid(run_id):
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def mlflow_run_dir(root, doc, run_id):
    for e in doc["mlflow"]["runs"]:
        if e["id"] == run_id:
            return Path(e["path"])
    raise AssertionError("run %s not in the export report" % run_id)


# --- MLflow -------------------------------------------------------------------------------

def test_mlflow_report_and_default_experiment(exported):
    root, runs, doc = exported
    assert doc["schema"] == "labbox.export/1"
    assert doc["mlflow"]["exported"] == 4 and len(doc["mlflow"]["runs"]) == 4
    store = root / "mlruns"
    # What FileStore creates in an empty root: the Default experiment and .trash.
    assert (store / ".trash").is_dir()
    meta = read_yaml(store / "0" / "meta.yaml")
    assert set(meta) == EXP_META_KEYS
    assert meta["experiment_id"] == "0" and meta["name"] == "Default"
    assert meta["lifecycle_stage"] == "active"
    assert isinstance(meta["creation_time"], int) and isinstance(meta["last_update_time"], int)
    assert meta["artifact_location"] == (store / "0").resolve().as_uri()


def test_mlflow_experiments_one_per_experiment_directory(exported):
    root, runs, doc = exported
    store = (root / "mlruns").resolve()
    names = {}
    for d in store.iterdir():
        if d.name in ("0", ".trash"):
            continue
        assert d.name.isdigit(), d.name
        meta = read_yaml(d / "meta.yaml")
        assert set(meta) == EXP_META_KEYS, meta
        assert isinstance(meta["experiment_id"], str) and meta["experiment_id"] == d.name
        assert meta["lifecycle_stage"] == "active"
        assert meta["artifact_location"] == d.as_uri()
        assert isinstance(meta["creation_time"], int)
        assert isinstance(meta["last_update_time"], int)
        assert meta["creation_time"] <= meta["last_update_time"]
        names[meta["name"]] = d.name
    assert set(names) == {ODD_NAME, "failing", "nan exp", "slow"}
    for key, r in runs.items():
        exp_id = names[r["exp"].name]
        assert mlflow_run_dir(root, doc, r["result"]["id"]).parent.name == exp_id


def test_mlflow_run_meta_field_by_field(exported):
    root, runs, doc = exported
    for key, r in runs.items():
        res = r["result"]
        d = mlflow_run_dir(root, doc, res["id"])
        uuid = run_uuid(res["id"])
        assert d.name == uuid
        meta = read_yaml(d / "meta.yaml")
        assert set(meta) == RUN_META_KEYS, (key, meta)
        assert meta["run_id"] == meta["run_uuid"] == uuid and re.fullmatch(r"[0-9a-f]{32}", uuid)
        assert meta["run_name"] == res["id"]
        assert meta["experiment_id"] == d.parent.name and isinstance(meta["experiment_id"], str)
        assert meta["artifact_uri"] == (d / "artifacts").as_uri()
        assert meta["lifecycle_stage"] == "active"
        assert meta["status"] == MLFLOW_STATUS[res["status"]], key
        assert meta["start_time"] == iso_ms(res["started_at"])
        assert meta["end_time"] == iso_ms(res["ended_at"])
        assert meta["source_type"] == 4  # SourceType.LOCAL
        assert meta["source_name"] == meta["entry_point_name"] == meta["source_version"] == ""
        assert meta["tags"] == []
        assert isinstance(meta["user_id"], str) and meta["user_id"]
    # The text itself: keys sorted as yaml.safe_dump writes them, one per line.
    text = (mlflow_run_dir(root, doc, runs["completed"]["result"]["id"]) / "meta.yaml").read_text()
    keys = [line.split(":")[0] for line in text.splitlines()]
    assert keys == sorted(RUN_META_KEYS)


def metric_files(d):
    out = {}
    base = d / "metrics"
    for dirpath, _, files in os.walk(base):
        for f in files:
            p = Path(dirpath) / f
            out[str(p.relative_to(base))] = p.read_text()
    return out


def test_mlflow_metrics_lines_and_names(exported):
    root, runs, doc = exported
    for key, r in runs.items():
        res = r["result"]
        d = mlflow_run_dir(root, doc, res["id"])
        files = metric_files(d)
        end = iso_ms(res["ended_at"])
        for name, text in files.items():
            # mlflow/utils/validation.py: allowed characters, and normpath must not change it.
            assert MLFLOW_NAME.match(name) and os.path.normpath(name) == name, name
            assert text.endswith("\n") and text.count("\n") == 1, (name, text)
            parts = text.strip().split(" ")
            assert len(parts) == 3, text  # FileStore._get_metric_from_line
            ts, val, step = int(parts[0]), float(parts[1]), int(parts[2])
            assert ts == end and step == 0
            # The value as Python's str(float), as FileStore writes it.
            assert parts[1] == str(val)
        expected = {}
        for k, v in flat_metrics(res).items():
            v = as_float(v)
            if isinstance(v, (int, float)):
                expected[k.replace("=", "_")] = float(v)
        assert set(files) == set(expected), (key, sorted(files), sorted(expected))
        for k, v in expected.items():
            assert same_number(float(files[k].split(" ")[1]), v), (k, files[k], v)


def test_mlflow_nan_and_inf_written_as_mlflow_does(exported):
    root, runs, doc = exported
    d = mlflow_run_dir(root, doc, runs["nan"]["result"]["id"])
    files = metric_files(d)
    assert files["loss"].split(" ")[1] == "nan"
    assert files["big"].split(" ")[1] == "inf"
    assert files["acc"].split(" ")[1] == "0.75"
    assert math.isnan(float("nan")) and float(files["loss"].split(" ")[1]) != 0
    assert (d / "tags" / "labbox.status").read_text() == "invalid_metrics"
    warnings = [e for e in doc["mlflow"]["runs"] if e["id"] == runs["nan"]["result"]["id"]][0]
    assert any("not finite" in w for w in warnings["warnings"])


def test_mlflow_params_tags_artifacts(exported):
    root, runs, doc = exported
    r = runs["completed"]
    res = r["result"]
    d = mlflow_run_dir(root, doc, res["id"])
    manifest = json.loads((r["run_dir"] / "manifest.json").read_text())
    params = {}
    for dirpath, _, files in os.walk(d / "params"):
        for f in files:
            p = Path(dirpath) / f
            params[str(p.relative_to(d / "params"))] = p.read_text()
    for name in params:
        assert MLFLOW_NAME.match(name) and os.path.normpath(name) == name, name
    assert params["entry"] == "main.py"
    assert params["args"] == "[]"
    assert params["python_version"] == manifest["interpreter"]["version"]
    assert params["python"] == manifest["interpreter"]["path"]
    assert params["b/note"] == "hello"  # a string-valued metric
    assert "budget_s" not in params
    t = runs["timeout"]
    tparams = mlflow_run_dir(root, doc, t["result"]["id"]) / "params"
    assert (tparams / "budget_s").read_text() == "1.0"

    tags = {p.name: p.read_text() for p in (d / "tags").iterdir()}
    assert tags["mlflow.runName"] == res["id"]
    assert tags["mlflow.source.name"] == str(r["exp"]) + "/main.py"
    assert tags["mlflow.source.type"] == "LOCAL"
    assert tags["mlflow.user"] == read_yaml(d / "meta.yaml")["user_id"]
    assert tags["labbox.status"] == "completed"
    assert tags["labbox.run_dir"] == str(r["run_dir"])
    assert tags["labbox.exit_code"] == "0"
    assert json.loads(tags["labbox.renamed_keys"]) == {"lr_0.1/acc": "lr=0.1/acc",
                                                       "lr_0.1/tiny": "lr=0.1/tiny"}
    for name in tags:
        assert MLFLOW_NAME.match(name), name
    if manifest.get("git"):
        assert tags["mlflow.source.git.commit"] == manifest["git"]["commit"]

    failed = runs["failed"]
    ftags = mlflow_run_dir(root, doc, failed["result"]["id"]) / "tags"
    assert (ftags / "labbox.status").read_text() == "failed"
    assert (ftags / "labbox.exit_code").read_text() == "1"
    assert (ftags / "labbox.failure_class").read_text() == failed["result"]["failure"]["class"]
    assert (ftags / "mlflow.note.content").read_text() == failed["result"]["failure"]["summary"]

    for key, rr in runs.items():
        art = mlflow_run_dir(root, doc, rr["result"]["id"]) / "artifacts"
        for f in ("result.json", "manifest.json", "environment.txt", "run.log"):
            assert (art / f).read_bytes() == (rr["run_dir"] / f).read_bytes(), (key, f)


def test_mlflow_reexport_is_idempotent(exported):
    root, runs, doc = exported
    before = tree(root / "mlruns")
    p = labbox(root, "runs", "export", "--mlflow", "mlruns")
    assert p.returncode == 0, p.stderr
    assert "exported 4 runs" in p.stdout and "mlflow ui --backend-store-uri" in p.stdout
    after = tree(root / "mlruns")
    assert after == before
    # A stale file from an older export is cleared, not kept beside the new ones.
    d = mlflow_run_dir(root, doc, runs["failed"]["result"]["id"])
    (d / "metrics" / "stale").write_text("1 2.0 0\n")
    assert labbox(root, "runs", "export", "--mlflow", "mlruns").returncode == 0
    assert not (d / "metrics" / "stale").exists()
    assert tree(root / "mlruns") == before


def test_mlflow_export_honours_filters(lab):
    root, runs = lab
    p = labbox(root, "runs", "export", "--mlflow", "only-failed", "--status", "failed", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [e["id"] for e in doc["mlflow"]["runs"]] == [runs["failed"]["result"]["id"]]
    exps = [d for d in (root / "only-failed").iterdir() if d.name not in ("0", ".trash")]
    assert len(exps) == 1 and read_yaml(exps[0] / "meta.yaml")["name"] == "failing"


# --- Sacred -------------------------------------------------------------------------------

def sacred_dirs(root):
    return sorted((d for d in (root / "sacred").iterdir() if d.name.isdigit()),
                  key=lambda d: int(d.name))


def sacred_by_id(root):
    out = {}
    for d in sacred_dirs(root):
        info = json.loads((d / "info.json").read_text())
        out[info["labbox"]["id"]] = d
    return out


def test_sacred_numbering_oldest_first(exported):
    root, runs, doc = exported
    dirs = sacred_dirs(root)
    assert [d.name for d in dirs] == ["1", "2", "3", "4"]
    order = sorted(runs.values(), key=lambda r: r["result"]["started_at"])
    assert [sacred_by_id(root)[r["result"]["id"]].name for r in order] == ["1", "2", "3", "4"]
    assert sorted(e["sacred_id"] for e in doc["sacred"]["runs"]) == [1, 2, 3, 4]
    for d in dirs:
        for f in ("config.json", "run.json", "metrics.json", "info.json", "cout.txt"):
            assert (d / f).is_file(), (d, f)


def test_sacred_run_json_field_by_field(exported):
    root, runs, doc = exported
    by_id = sacred_by_id(root)
    for key, r in runs.items():
        res = r["result"]
        d = by_id[res["id"]]
        text = (d / "run.json").read_text()
        run = json.loads(text)
        want = {"artifacts", "command", "experiment", "heartbeat", "host", "meta", "resources",
                "result", "start_time", "status", "stop_time"}
        if SACRED_STATUS[res["status"]] == "FAILED":
            want.add("fail_trace")
        assert set(run) == want, (key, set(run) ^ want)
        # json.dump(..., sort_keys=True): top-level keys in order.
        pairs = json.loads(text, object_pairs_hook=lambda kv: [k for k, _ in kv])
        assert pairs == sorted(pairs)
        assert run["status"] == SACRED_STATUS[res["status"]], key
        # datetime.isoformat() of naive UTC times.
        start = datetime.datetime.fromisoformat(run["start_time"])
        stop = datetime.datetime.fromisoformat(run["stop_time"])
        assert start.tzinfo is None and stop.tzinfo is None
        assert int(start.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5) == \
            iso_ms(res["started_at"])
        assert int(stop.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5) == \
            iso_ms(res["ended_at"])
        assert run["heartbeat"] == run["stop_time"]
        assert run["command"] == "main" and run["meta"]["command"] == "main"
        assert set(run["meta"]) >= {"command", "options"}
        assert run["resources"] == []
        assert run["artifacts"] == ["result.json", "manifest.json", "environment.txt"]
        for a in run["artifacts"]:
            assert (d / a).read_bytes() == (r["run_dir"] / a).read_bytes()
        assert (d / "cout.txt").read_bytes() == (r["run_dir"] / "run.log").read_bytes()

        exp = run["experiment"]
        assert set(exp) == {"base_dir", "dependencies", "mainfile", "name", "repositories",
                            "sources"}
        assert exp["name"] == r["exp"].name and exp["base_dir"] == str(r["exp"])
        assert exp["mainfile"] == "main.py"
        assert all("==" in dep for dep in exp["dependencies"])
        assert exp["dependencies"] == sorted(exp["dependencies"])
        src = (r["exp"] / "main.py").read_bytes()
        md5 = hashlib.md5(src).hexdigest()
        assert exp["sources"] == [["main.py", "_sources/main_%s.py" % md5]]
        assert (root / "sacred" / exp["sources"][0][1]).read_bytes() == src

        host = run["host"]
        assert set(host) >= {"hostname", "os", "python_version", "cpu", "ENV"}
        manifest = json.loads((r["run_dir"] / "manifest.json").read_text())
        assert host["python_version"] == manifest["interpreter"]["version"]
        assert host["ENV"] == manifest["config"]["environment"]
        assert json.loads((d / "config.json").read_text()) == manifest["config"]

        if run["status"] == "COMPLETED":
            assert run["result"]["b/note"] == "hello"
        else:
            assert run["result"] is None
        if run["status"] == "FAILED":
            assert isinstance(run["fail_trace"], list) and run["fail_trace"]
            assert all(line.endswith("\n") for line in run["fail_trace"])


def test_sacred_metrics_and_info(exported):
    root, runs, doc = exported
    by_id = sacred_by_id(root)
    for key, r in runs.items():
        res = r["result"]
        d = by_id[res["id"]]
        metrics = json.loads((d / "metrics.json").read_text())  # Python's json reads NaN
        run = json.loads((d / "run.json").read_text())
        expected = {k: float(as_float(v)) for k, v in flat_metrics(res).items()
                    if isinstance(as_float(v), (int, float))}
        assert set(metrics) == set(expected), key
        for name, m in metrics.items():
            assert list(m) == ["steps", "timestamps", "values"]
            assert m["steps"] == [0] and m["timestamps"] == [run["stop_time"]]
            assert len(m["values"]) == 1 and same_number(m["values"][0], expected[name])
        info = json.loads((d / "info.json").read_text())["labbox"]
        assert info["id"] == res["id"] and info["status"] == res["status"]
        assert info["run_dir"] == res["run_dir"]
        assert info["labbox_exit_code"] == res["labbox_exit_code"]
    nan = json.loads((by_id[runs["nan"]["result"]["id"]] / "metrics.json").read_text())
    assert math.isnan(nan["loss"]["values"][0]) and nan["big"]["values"][0] == math.inf
    assert "NaN" in (by_id[runs["nan"]["result"]["id"]] / "metrics.json").read_text()


def test_sacred_reexport_updates_in_place(exported):
    root, runs, doc = exported
    before = tree(root / "sacred")
    p = labbox(root, "runs", "export", "--sacred", "sacred")
    assert p.returncode == 0, p.stderr
    assert tree(root / "sacred") == before
    # A new run takes the next free number; the old ones keep theirs.
    exp = make_exp(root, "later", "print('acc: 1.0')\n")
    assert labbox(root, "run", "-q", "--python", PYTHON, exp).returncode == 0
    assert labbox(root, "runs", "export", "--sacred", "sacred").returncode == 0
    assert [d.name for d in sacred_dirs(root)] == ["1", "2", "3", "4", "5"]
    assert json.loads((root / "sacred" / "5" / "run.json").read_text())["experiment"]["name"] \
        == "later"


# --- the command line ---------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["runs", "export"],
    ["runs", "export", "--mlflow"],
    ["runs", "export", "--mlflow", ""],
    ["runs", "export", "--mlflow", "x", "extra"],
    ["runs", "export", "--mlflow", "x", "--bogus"],
    ["runs", "export", "--mlflow", "x", "--limit", "0"],
    ["runs", "export", "--mlflow", "x", "--metric", "acc>>1"],
    ["runs", "list", "--mlflow", "x"],
    ["runs", "show", "abc", "--sacred", "x"],
])
def test_bad_flags_exit_2_with_one_line(lab, args):
    root, runs = lab
    p = labbox(root, *args)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_export_without_index_is_a_usage_error(tmp_path):
    p = labbox(tmp_path, "runs", "export", "--mlflow", "out")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_unwritable_target_exits_1(lab):
    root, runs = lab
    (root / "a-file").write_text("x")
    p = labbox(root, "runs", "export", "--mlflow", "a-file/sub")
    assert p.returncode == 1 and "a-file" in p.stderr


def test_help_documents_export(tmp_path):
    p = labbox(tmp_path, "runs", "--help")
    assert p.returncode == 0
    assert "--mlflow DIR" in p.stdout and "--sacred DIR" in p.stdout
