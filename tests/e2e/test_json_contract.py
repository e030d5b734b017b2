"""The --json contract: with --json every command prints exactly one JSON document on stdout
for every outcome, usage errors and refusals included, and human text stays on stderr."""
import json
import os

import pytest

from conftest import PYTHON, labbox, run_dirs, unique, write_exp

EXP_MAIN = "print('EXPERIMENT-RAN')\n"


def one_document(p):
    """stdout parses as exactly one JSON document (json.loads refuses trailing text)."""
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise AssertionError(f"stdout is not one JSON document ({e}); rc={p.returncode}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}") from None


def assert_error_doc(p, command, rc, status, *needles):
    assert p.returncode == rc, (p.returncode, p.stdout, p.stderr)
    doc = one_document(p)
    assert doc["schema"] == "labbox.error/1", doc
    assert doc["command"] == command, doc
    assert doc["status"] == status, doc
    assert doc["exit_code"] == rc, doc
    msg = doc["error"]["message"]
    assert any(n.lower() in msg.lower() for n in needles), f"{msg!r} names none of {needles}"
    # The same message for a person, on stderr.
    assert msg in p.stderr, (msg, p.stderr)
    assert "EXPERIMENT-RAN" not in p.stdout + p.stderr
    return doc


@pytest.mark.parametrize("argv,needles", [
    # --json after the bad flag: getopt stops before it, labbox still sees it.
    (["--frobnicate", "--json"], ["--frobnicate"]),
    (["--memory", "lots", "--json"], ["lots"]),
    (["--budget", "soon", "--json"], ["budget"]),
    (["--cpus", "many", "--json"], ["cpus"]),
    (["--network", "bridge", "--json"], ["bridge"]),
    (["--json", "--log-limit", "huge"], ["log-limit"]),
    (["--json", "-e", "NOEQUALS"], ["NOEQUALS"]),
    (["--json", "--policy", "lax"], ["policy"]),
    (["--js", "--grace", "x"], ["grace"]),  # an abbreviation, as getopt_long accepts it
])
def test_run_bad_flags_give_one_error_document(tmp_path, argv, needles):
    exp = write_exp(tmp_path, EXP_MAIN)
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", *argv, exp)
    assert_error_doc(p, "run", 2, "usage_error", *needles)
    assert run_dirs(tmp_path / "runs") == []


def test_run_missing_value_at_the_end(tmp_path):
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", "--python")
    assert_error_doc(p, "run", 2, "usage_error", "--python")


def test_run_without_expdir(tmp_path):
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs")
    assert_error_doc(p, "run", 2, "usage_error", "experiment directory")


def test_run_missing_expdir(tmp_path):
    missing = tmp_path / unique("nope")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", missing)
    assert_error_doc(p, "run", 2, "usage_error", str(missing))


def test_run_bad_yaml(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN, yaml="metrics: [a, b\nentry: : :\n")
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp, "--json")
    assert_error_doc(p, "run", 2, "usage_error", "labbox.yaml")


def test_run_unknown_yaml_key(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN, yaml="entrypoint: main.py\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert_error_doc(p, "run", 2, "usage_error", "entrypoint")


def test_run_missing_entry_point(tmp_path):
    exp = write_exp(tmp_path, None, files={"helper.py": "x = 1\n"})
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert_error_doc(p, "run", 2, "usage_error", "main.py")


def test_run_bad_interpreter(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN)
    p = labbox("run", "--json", "--python", tmp_path / "no-python", "--runs-dir",
               tmp_path / "runs", exp)
    assert_error_doc(p, "run", 2, "usage_error", "no-python")


def test_json_after_dashdash_is_the_experiments(tmp_path):
    """`--json` after `--` is an argument of the experiment: no JSON mode for labbox."""
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", "--frobnicate",
               tmp_path, "--", "--json")
    assert p.returncode == 2
    assert p.stdout == ""


@pytest.mark.xdist_group("host_gpu_nodes")  # not beside test_gpus.py's fake device nodes
@pytest.mark.skipif(any(n.startswith("nvidia") for n in os.listdir("/dev")),
                    reason="this host has an NVIDIA GPU")
def test_run_refused_gpu_is_an_infra_error_document(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "--gpus", "0", exp)
    assert_error_doc(p, "run", 125, "infra_error", "gpu", "nvidia")


def test_run_setup_failure_with_a_run_dir_is_a_run_document(tmp_path):
    """When a run directory exists the document is labbox.run/1 with an error field."""
    exp = write_exp(tmp_path, EXP_MAIN)
    src = tmp_path / "data"
    src.mkdir()
    # A mount point below a regular file cannot exist: the sandbox cannot be set up.
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "-v", f"{src}:/etc/hostname/sub", exp)
    assert p.returncode == 125, (p.stdout, p.stderr)
    doc = one_document(p)
    assert doc["schema"] == "labbox.run/1"
    assert doc["status"] == "infra_error"
    assert doc["labbox_exit_code"] == 125
    assert "/etc/hostname/sub" in doc["error"]["message"], doc["error"]
    assert doc["run_dir"]


@pytest.mark.parametrize("argv,rc,status,needles", [
    (["--json"], 2, "usage_error", ["command"]),
    (["--frobnicate", "--json", "--", "/bin/true"], 2, "usage_error", ["frobnicate"]),
    (["--memory", "lots", "--json", "--", "/bin/true"], 2, "usage_error", ["lots"]),
    (["--json", "--", "/nonexistent/cmd"], 127, "not_found", ["/nonexistent/cmd"]),
    (["--json", "-v", "relative:/x", "--", "/bin/true"], 2, "usage_error", ["relative"]),
])
def test_exec_errors_give_one_document(argv, rc, status, needles):
    p = labbox("exec", *argv)
    assert_error_doc(p, "exec", rc, status, *needles)


def test_exec_json_of_the_command_is_not_labboxs():
    """exec's options end at the command: a --json after it is the command's own."""
    p = labbox("exec", "--", "/bin/echo", "--json")
    assert p.returncode == 0
    assert p.stdout == "--json\n"


@pytest.mark.parametrize("argv,needles", [
    (["--json"], ["PATH"]),
    (["--policy", "lax", "--json", "x.py"], ["policy"]),
    (["--json", "/nonexistent/x.py"], ["/nonexistent/x.py"]),
])
def test_check_errors_give_one_document(argv, needles):
    p = labbox("check", *argv)
    assert_error_doc(p, "check", 2, "usage_error", *needles)


def test_probe_bad_flag_gives_one_document():
    p = labbox("probe", "--bogus", "--json")
    assert_error_doc(p, "probe", 2, "usage_error", "--bogus")


@pytest.mark.parametrize("argv,needles", [
    (["list", "--status", "nonsense", "--json"], ["nonsense"]),
    (["show", "--json"], ["show"]),
    (["frob", "--json"], ["frob"]),
    (["list", "--json"], ["run index"]),
    (["show", "abc", "--json"], ["run index"]),
])
def test_runs_errors_give_one_document(tmp_path, argv, needles):
    p = labbox("runs", "--runs-dir", tmp_path / "runs", *argv)
    assert_error_doc(p, "runs", 2, "usage_error", *needles)


def test_rerun_unknown_run_gives_one_document(tmp_path):
    p = labbox("rerun", "--json", "--runs-dir", tmp_path / "runs", "nope")
    assert_error_doc(p, "rerun", 2, "usage_error", "run index")


def test_unknown_command_with_json():
    p = labbox("frobnicate", "--json")
    assert_error_doc(p, "frobnicate", 2, "usage_error", "frobnicate")


def test_success_still_prints_its_own_document(tmp_path):
    exp = write_exp(tmp_path, "print('m: 1')\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stderr
    assert one_document(p)["schema"] == "labbox.run/1"
