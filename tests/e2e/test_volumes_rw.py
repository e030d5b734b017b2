"""Writable volumes and who may write them: as root the experiment runs as uid 65534, so a
`-v SRC:DST:rw` whose SRC is root's 0755 directory is warned of at the start and named as the
cause when a write under DST is refused (not "granted: false" and a deeper mount); a volume of
a directory over a file of the sandbox (or the reverse) is a usage error, and the advice for
a file the experiment opened describes SRC as a file. Real runs through the real binary."""
import json
import os

import pytest

from conftest import labbox, run_exp, write_exp

PERMISSIVE = ("--policy", "permissive")
ROOT = os.geteuid() == 0
root_only = pytest.mark.skipif(not ROOT, reason="as an ordinary user the experiment runs as "
                               "that user (identity map): only root's runs are uid 65534")

WRITES_RESULTS = """
    import os, json
    out = "/results/exp1"
    os.makedirs(out, exist_ok=True)
    json.dump({"accuracy": 0.9}, open(os.path.join(out, "metrics.json"), "w"))
    print("accuracy: 0.9")
"""


def results_volume(tmp_path, mode):
    src = tmp_path / "results_host"
    src.mkdir()
    os.chmod(src, mode)
    return src


@root_only
def test_a_writable_volume_uid_65534_cannot_write_is_warned_and_named(tmp_path):
    src = results_volume(tmp_path, 0o755)  # root's, as `mkdir` makes it
    exp = write_exp(tmp_path, WRITES_RESULTS)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "-v", f"{src}:/results:rw")
    assert r.rc == 1, r.why()
    # the warning at the start: the volume, the uid and the fix
    warn = [l for l in r.stderr.splitlines() if "warning:" in l and str(src) in l]
    assert warn, r.stderr
    assert "uid 65534" in warn[0] and f"chown 65534 {src}" in warn[0], warn
    assert "chmod o+wx" in warn[0] and "mode 0755" in warn[0], warn
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    esc = f["escalation"]
    assert esc["granted"] is True, f
    assert esc["flag"] == f"-v {src}:/results:rw", f
    assert "/results/exp1:rw" not in json.dumps(f), f
    assert f"chown 65534 {src}" in f["suggestion"] and "uid 65534" in f["suggestion"], f
    assert "writable volume /results" in f["summary"], f
    # explain says the same from the record
    p = labbox("explain", "--json", "--runs-dir", tmp_path / "runs", r.result["id"])
    assert p.returncode == 0, p.stderr
    ef = json.loads(p.stdout)["failure"]
    assert ef["escalation"]["granted"] is True and "chown 65534" in ef["suggestion"], ef
    # what the warning said fixes it
    os.chmod(src, 0o777)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "-v", f"{src}:/results:rw")
    assert r.rc == 0, r.why()
    assert "warning:" not in r.stderr or str(src) not in r.stderr, r.stderr
    assert json.loads((src / "exp1" / "metrics.json").read_text()) == {"accuracy": 0.9}


def test_a_writable_volume_the_experiment_can_write_is_not_warned(tmp_path):
    src = results_volume(tmp_path, 0o777)
    exp = write_exp(tmp_path, WRITES_RESULTS)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "-v", f"{src}:/results:rw")
    assert r.rc == 0, r.why()
    assert "65534" not in r.stderr, r.stderr


@root_only
def test_a_file_the_experiment_opened_is_advised_as_a_file(tmp_path):
    exp = write_exp(tmp_path, """
        open("/etc/hosts", "a").write("127.0.0.2 x\\n")
    """)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE)
    assert r.rc == 1, r.why()
    esc = r.result["failure"]["escalation"]
    assert esc["flag"] == "-v SRC:/etc/hosts:rw", esc
    assert "host file" in esc["note"] and "directory to write" not in esc["note"], esc
    assert "65534" in esc["note"], esc


def test_a_directory_over_a_file_of_the_sandbox_is_a_usage_error(tmp_path):
    d = tmp_path / "hostsdir"
    d.mkdir()
    exp = write_exp(tmp_path, "print('accuracy: 1')\n")
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", "-v", f"{d}:/etc/hosts:rw", exp)
    assert p.returncode == 2, (p.stdout, p.stderr)
    msg = json.loads(p.stdout)["error"]["message"]
    assert str(d) in msg and "/etc/hosts" in msg and "directory" in msg and "file" in msg, msg
    assert "infra" not in p.stdout and "bind" not in msg


def test_a_file_over_a_directory_of_the_sandbox_is_a_usage_error(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("x")
    exp = write_exp(tmp_path, "print('accuracy: 1')\n")
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", "-v", f"{f}:/usr:ro", exp)
    assert p.returncode == 2, (p.stdout, p.stderr)
    msg = json.loads(p.stdout)["error"]["message"]
    assert str(f) in msg and "/usr" in msg and "is a file" in msg, msg


def test_a_file_over_a_file_of_the_sandbox_runs(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("127.0.0.9 labbox-test-host\n")
    exp = write_exp(tmp_path, """
        print(open("/etc/hosts").read().strip())
        print("accuracy: 1")
    """)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "-v", f"{f}:/etc/hosts:ro")
    assert r.rc == 0, r.why()
    assert "labbox-test-host" in r.log()
