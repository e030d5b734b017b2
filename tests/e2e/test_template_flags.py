"""The flags a real experiment template needs (issue 9 §5): --entry, -v onto a mount point
the host lacks, --tmpfs, --shm-size, and --cpus setting the thread counts libraries read.
Each is checked from inside (what the experiment sees), from the host (nothing written
there), and through `labbox rerun` (the manifest repeats it)."""
import json
import os
from pathlib import Path

import pytest

from conftest import PYTHON, labbox, run_exp, unique, write_exp

THREAD_VARS = ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"]


def rerun(run, runs_dir):
    p = labbox("rerun", "--json", "-q", "--runs-dir", runs_dir, run.result["id"])
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    doc = json.loads(p.stdout)
    manifest = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    return doc, manifest


def error_doc(p, rc=2):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.error/1", doc
    return doc["error"]["message"]


# --- --entry --------------------------------------------------------------------------------

def test_entry_flag_runs_another_file_without_labbox_yaml(tmp_path):
    exp = write_exp(tmp_path, None, files={"train.py": "print('which: 2')\n"})
    r = run_exp(exp, tmp_path / "runs", "--entry", "train.py")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["which"] == 2
    cfg = r.file_json("manifest.json")["config"]
    assert cfg["entry"] == "train.py"
    assert cfg["entry_named_by"] == "command line"
    doc, manifest = rerun(r, tmp_path / "runs")
    assert doc["metrics"]["values"]["which"] == 2
    assert manifest["config"]["entry"] == "train.py"
    assert manifest["config"]["entry_named_by"] == "command line"
    assert doc["rerun"]["metrics_match"] is True



AI_SCIENTIST_EXPERIMENT = """
import argparse, json, os
p = argparse.ArgumentParser()
p.add_argument("--out_dir", type=str, default="run_0")
a = p.parse_args()
os.makedirs(a.out_dir, exist_ok=True)
print("train_loss: 0.25")
with open(os.path.join(a.out_dir, "final_info.json"), "w") as f:
    json.dump({"demo": {"means": {"val_loss": 0.5}}}, f)
"""


def test_an_ai_scientist_template_needs_no_entry(tmp_path):
    """AI-Scientist's templates have experiment.py and no main.py: run, check and sweep take
    it as the entry point without --entry (the manifest says it was the default), rerun runs
    it again, and main.py still wins when a directory has both."""
    exp = write_exp(tmp_path, None, files={"experiment.py": AI_SCIENTIST_EXPERIMENT,
                                           "plot.py": "raise SystemExit('not the entry')\n"})
    r = run_exp(exp, tmp_path / "runs", args=("--out_dir=run_0",))
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["train_loss"] == 0.25, r.why()
    assert (r.exp / "run_0" / "final_info.json").is_file(), r.why()
    cfg = r.file_json("manifest.json")["config"]
    assert cfg["entry"] == "experiment.py" and cfg["entry_named_by"] == "default", cfg
    doc, manifest = rerun(r, tmp_path / "runs")
    assert manifest["config"]["entry"] == "experiment.py"
    assert doc["metrics"]["values"]["train_loss"] == 0.25
    p = labbox("check", "--json", exp)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    # The harness rules read the entry point: their findings are on experiment.py.
    harness = [f for f in json.loads(p.stdout)["findings"] if f["category"] == "harness"]
    assert harness and {f["file"] for f in harness} == {"experiment.py"}, p.stdout[-2000:]
    p = labbox("sweep", "--json", "--plan-only", "--seeds", "0-1", "--runs-dir",
               tmp_path / "sweeps", exp)
    assert p.returncode == 0, (p.stdout[-2000:], p.stderr[-2000:])
    (exp / "main.py").write_text("print('which: 1')\n")
    r2 = run_exp(exp, tmp_path / "runs")
    assert r2.result["metrics"]["values"] == {"which": 1}, r2.why()
    assert r2.file_json("manifest.json")["config"]["entry"] == "main.py"

def test_entry_flag_wins_over_labbox_yaml(tmp_path):
    exp = write_exp(tmp_path, "print('which: 1')\n", yaml="entry: main.py\n",
                    files={"train.py": "print('which: 2')\n"})
    r = run_exp(exp, tmp_path / "runs", "--entry", "train.py")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["which"] == 2
    r2 = run_exp(exp, tmp_path / "runs")
    assert r2.result["metrics"]["values"]["which"] == 1
    assert r2.file_json("manifest.json")["config"]["entry_named_by"] == "labbox.yaml"
    _, manifest = rerun(r2, tmp_path / "runs")
    assert manifest["config"]["entry"] == "main.py"
    assert manifest["config"]["entry_named_by"] == "labbox.yaml"


@pytest.mark.parametrize("entry,needle", [("nope.py", "nope.py"), ("../main.py", "inside")])
def test_entry_flag_bad_file(tmp_path, entry, needle):
    exp = write_exp(tmp_path, "print('which: 1')\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "--entry", entry, exp)
    assert needle in error_doc(p)


# --- -v onto a mount point the host lacks ---------------------------------------------------

READ_DATA = """
import os, sys
dst = sys.argv[1]
print('content:', open(os.path.join(dst, 'f.txt')).read().strip())
try:
    open(os.path.join(dst, 'new.txt'), 'w')
    print('writable: 1')
except OSError:
    print('writable: 0')
"""


def data_source(tmp_path):
    src = tmp_path / "datasrc"
    src.mkdir()
    (src / "f.txt").write_text("42\n")
    return src


@pytest.mark.skipif(os.path.lexists("/data"), reason="this host has a /data")
def test_volume_onto_missing_data_dir(tmp_path):
    """The seed's own example: -v SRC:/data:ro on a host without /data."""
    src = data_source(tmp_path)
    exp = write_exp(tmp_path, READ_DATA)
    r = run_exp(exp, tmp_path / "runs", "-v", f"{src}:/data:ro", args=["/data"])
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"content": 42, "writable": 0}
    assert not os.path.lexists("/data"), "labbox created /data on the host"
    assert sorted(os.listdir(src)) == ["f.txt"]


def test_volume_onto_missing_nested_dir_and_file(tmp_path):
    top = "/" + unique("lbxmnt")
    src = data_source(tmp_path)
    exp = write_exp(tmp_path, READ_DATA + """
print('file:', open(sys.argv[2]).read().strip())
print('root_entries_kept:', int(os.path.isdir('/usr/bin') and os.path.isdir('/etc')))
""")
    r = run_exp(exp, tmp_path / "runs", "-v", f"{src}:{top}/deep/data",
                "-v", f"{src}/f.txt:/opt/{unique('lbx')}/x.txt",
                args=[f"{top}/deep/data", "/dev/null"])
    assert r.rc == 0, r.why()
    vals = r.result["metrics"]["values"]
    assert vals["content"] == 42 and vals["writable"] == 0 and vals["root_entries_kept"] == 1
    assert not os.path.lexists(top)
    # rerun applies the same volumes again
    doc, manifest = rerun(r, tmp_path / "runs")
    assert doc["metrics"]["values"]["content"] == 42
    assert not os.path.lexists(top)


def test_volume_under_a_file_is_a_setup_failure(tmp_path):
    src = data_source(tmp_path)
    exp = write_exp(tmp_path, READ_DATA)
    r = run_exp(exp, tmp_path / "runs", "-v", f"{src}:/etc/hostname/x")
    assert r.rc == 125
    assert "/etc/hostname/x" in r.result["error"]["message"]


@pytest.mark.parametrize("spec,needle", [
    ("{src}:/with:colon", "':'"),
    ("{src}:/a:/b", "':'"),
    ("{src}:/data:rx", "mode"),
    ("/proc:/hostproc", "kernel file system"),
    ("/proc/self:/hostproc", "kernel file system"),
    ("/sys:/hostsys", "kernel file system"),
    ("/dev:/hostdev", "kernel file system"),
    ("{src}:/", "root"),
])
def test_volume_bad_specs(tmp_path, spec, needle):
    src = data_source(tmp_path)
    exp = write_exp(tmp_path, READ_DATA)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "-v", spec.format(src=src), exp)
    assert needle in error_doc(p)
    assert needle in p.stderr


# --- --tmpfs and --shm-size -----------------------------------------------------------------

STATVFS = """
import os, sys
for path in sys.argv[1:]:
    st = os.statvfs(path)
    name = path.strip('/').replace('/', '_')
    print(f'{name}_mib:', st.f_blocks * st.f_frsize // (1 << 20))
    open(os.path.join(path, 'written.txt'), 'w').write('x')
    print(f'{name}_writable: 1')
"""


def test_tmpfs_and_shm_size(tmp_path):
    scratch = "/" + unique("scratch")
    exp = write_exp(tmp_path, STATVFS)
    r = run_exp(exp, tmp_path / "runs", "--tmpfs", f"{scratch}:size=16m",
                "--tmpfs", "/tmp:size=8m", "--shm-size", "32m",
                args=[scratch, "/tmp", "/dev/shm"])
    assert r.rc == 0, r.why()
    name = scratch.strip("/")
    vals = r.result["metrics"]["values"]
    assert vals[f"{name}_mib"] == 16 and vals[f"{name}_writable"] == 1
    assert vals["tmp_mib"] == 8
    assert vals["dev_shm_mib"] == 32
    assert not os.path.lexists(scratch)
    sbx = r.file_json("manifest.json")["config"]["sandbox"]
    assert sbx["tmpfs"] == [f"{scratch}:size=16m", "/tmp:size=8m"]
    assert sbx["shm_size_bytes"] == 32 << 20
    doc, _ = rerun(r, tmp_path / "runs")
    assert doc["metrics"]["values"] == vals


def test_shm_default_is_1g(tmp_path):
    exp = write_exp(tmp_path, STATVFS)
    r = run_exp(exp, tmp_path / "runs", args=["/dev/shm"])
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"]["dev_shm_mib"] == 1024


@pytest.mark.parametrize("argv,needle", [
    (["--tmpfs", "/proc/x"], "/proc"),
    (["--tmpfs", "/dev/shm"], "--shm-size"),
    (["--tmpfs", "relative"], "/PATH"),
    (["--tmpfs", "/x:size=big"], "big"),
    (["--tmpfs", "/x:noexec"], "noexec"),
    (["--shm-size", "lots"], "lots"),
    (["--shm-size", "0"], "shm-size"),
])
def test_tmpfs_bad_specs(tmp_path, argv, needle):
    exp = write_exp(tmp_path, STATVFS)
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", *argv, exp,
               "--json")
    assert needle in error_doc(p)


# --- --cpus and thread counts ---------------------------------------------------------------

PRINT_THREADS = """
import os
for k in %r:
    print(f'{k}: {os.environ.get(k, -1)}')
""" % (THREAD_VARS,)


def test_cpus_sets_thread_counts_and_e_wins(tmp_path):
    exp = write_exp(tmp_path, PRINT_THREADS)
    r = run_exp(exp, tmp_path / "runs", "--cpus", "1.5", "--allow-degraded", "cpus",
                "-e", "MKL_NUM_THREADS=7")
    assert r.rc == 0, r.why()
    vals = r.result["metrics"]["values"]
    assert vals == {**{k: 2 for k in THREAD_VARS}, "MKL_NUM_THREADS": 7}
    doc, _ = rerun(r, tmp_path / "runs")
    assert doc["metrics"]["values"] == vals


def test_no_cpus_no_thread_counts(tmp_path):
    exp = write_exp(tmp_path, PRINT_THREADS)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert set(r.result["metrics"]["values"].values()) == {-1}


def test_exec_cpus_thread_counts():
    p = labbox("exec", "--cpus", "3", "--allow-degraded", "cpus", "--", "/usr/bin/env")
    assert p.returncode == 0, p.stderr
    env = dict(l.split("=", 1) for l in p.stdout.splitlines() if "=" in l)
    # ceil(--cpus), but never more than the CPUs this process may run on
    want = str(min(3, len(os.sched_getaffinity(0))))
    assert all(env[k] == want for k in THREAD_VARS), env
