"""Bad input: every usage or configuration error exits 2 with one line on stderr naming the
problem, and nothing is executed."""
import pytest

from conftest import PYTHON, labbox, run_dirs, unique, write_exp

EXP_MAIN = "print('EXPERIMENT-RAN')\nopen('ran.txt', 'w').write('x')\n"


def assert_usage_error(p, *needles):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, f"stderr should be one line, got {len(lines)}:\n{p.stderr}"
    line = lines[0]
    assert line.startswith("labbox"), line
    low = line.lower()
    assert any(n.lower() in low for n in needles), f"{line!r} names none of {needles}"
    assert "EXPERIMENT-RAN" not in p.stdout + p.stderr


def test_run_without_expdir(tmp_path):
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs")
    assert_usage_error(p, "EXPDIR", "experiment", "directory", "missing")
    assert run_dirs(tmp_path / "runs") == []


def test_run_nonexistent_expdir(tmp_path):
    missing = tmp_path / unique("nope")
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", missing)
    assert_usage_error(p, str(missing), missing.name)
    assert run_dirs(tmp_path / "runs") == []


def test_run_missing_entry_point(tmp_path):
    exp = write_exp(tmp_path, None, files={"helper.py": "x = 1\n"})
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert_usage_error(p, "main.py", "entry")


def test_run_missing_yaml_entry(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN, yaml="entry: train.py\n")
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert_usage_error(p, "train.py")


def test_run_bad_yaml(tmp_path):
    exp = write_exp(tmp_path, EXP_MAIN, yaml="metrics: [a, b\nentry: : :\n")
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert_usage_error(p, "labbox.yaml", "yaml")


@pytest.mark.parametrize("argv,needles", [
    (["--frobnicate"], ["--frobnicate", "frobnicate"]),
    (["--memory", "lots"], ["lots"]),
    (["--budget", "-1"], ["budget"]),
    (["--budget", "soon"], ["budget", "soon"]),
    (["--grace", "x"], ["grace"]),
    (["--cpus", "many"], ["cpus", "many"]),
    (["--pids-limit", "-5"], ["pids"]),
    (["--network", "bridge"], ["network", "bridge"]),
    (["--log-limit", "huge"], ["log-limit", "huge"]),
    (["-e", "NOEQUALS"], ["NOEQUALS", "-e", "K=V"]),
    (["--python"], ["--python", "python"]),
])
def test_run_bad_flags(tmp_path, argv, needles):
    exp = write_exp(tmp_path, EXP_MAIN)
    args = ["run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", *argv]
    if argv != ["--python"]:
        args.append(exp)
    p = labbox(*args)
    assert_usage_error(p, *needles)
    for d in run_dirs(tmp_path / "runs"):
        assert not (d / "exp" / "ran.txt").exists()


@pytest.mark.parametrize("argv,needles", [
    (["--frobnicate", "--", "/bin/true"], ["frobnicate"]),
    (["--memory", "lots", "--", "/bin/true"], ["lots"]),
    (["--budget", "-1", "--", "/bin/true"], ["budget"]),
    ([], ["command", "CMD", "missing"]),
])
def test_exec_bad_input(argv, needles):
    p = labbox("exec", *argv)
    assert_usage_error(p, *needles)


def test_unknown_subcommand():
    p = labbox("frobnicate")
    assert_usage_error(p, "frobnicate")


def test_help_exits_0():
    for args in (["--help"], ["run", "--help"], ["exec", "--help"]):
        p = labbox(*args)
        assert p.returncode == 0, (args, p.stderr)
        assert "usage" in (p.stdout + p.stderr).lower(), args


def test_valid_sizes_accepted(tmp_path):
    exp = write_exp(tmp_path, "print('m: 1')\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "--memory", "4g", "--log-limit", "10m", "--budget", "60", "--grace", "1", exp)
    assert p.returncode in (0, 125), (p.returncode, p.stderr)
