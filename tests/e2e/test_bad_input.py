"""Bad input gets a clear error naming the problem and a defined exit code; records never
let a name play tricks on the terminal of the person reading them."""
import json
import os
from pathlib import Path

import pytest

from conftest import LABBOX, PYTHON, labbox, write_exp

GOOD = 'print("accuracy: 0.5")\n'


@pytest.mark.parametrize("yaml,needle", [
    ('args: ["a\\0b"]\n', "NUL"),
    ('entry: "ma\\0in.py"\n', "NUL"),
    ("args: [a]\n---\nargs: [b]\n", "second YAML document"),
    # the last of two would win silently: a first budget meant as 1 s ran for 600
    ("budget: 1\nbudget: 600\n", "'budget' is given twice"),
    ("slurm:\n  memory: 1g\n  memory: 64g\n", "'memory' is given twice"),
])
def test_yaml_that_would_be_misread_is_refused(tmp_path, yaml, needle):
    exp = write_exp(tmp_path, GOOD, yaml=yaml)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 2, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert needle in doc["error"]["message"], doc
    assert "labbox.yaml line" in doc["error"]["message"], doc


DEEP = 200_000  # the parse was quadratic in depth: 20,000 levels took 5 s, 100,000 over 100 s


@pytest.mark.parametrize("yaml,line", [
    ("x: " + "[" * DEEP + "]" * DEEP + "\n", 1),
    ("entry: main.py\nsweep:\n  parameters: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n", 3),
    ("entry: main.py\ncheck:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(80))
     + "  " * 81 + "v\n", 66),
], ids=["flow-lists", "flow-mappings", "block-mappings"])
@pytest.mark.parametrize("cmd", [("run", "--json"), ("check", "--json"),
                                 ("sweep", "--plan-only", "--json")],
                         ids=["run", "check", "sweep"])
def test_deeply_nested_yaml_is_refused_at_once(tmp_path, yaml, line, cmd):
    """Flow lists, flow mappings and block mappings nested past 64 levels are refused before
    libyaml composes them, with the line, exit 2 and labbox.error/1, in well under a second
    of CPU where the depth used to cost minutes."""
    exp = write_exp(tmp_path, GOOD, yaml=yaml)
    extra = ("--python", PYTHON, "--runs-dir", tmp_path / "runs") if cmd[0] != "check" else ()
    p = labbox(*cmd, *extra, exp, timeout=20)
    assert p.returncode == 2, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.error/1", doc
    msg = doc["error"]["message"]
    assert f"labbox.yaml line {line}: nested too deeply (more than 64 levels" in msg, doc


def test_nesting_at_the_limit_is_read(tmp_path):
    """64 levels (the file's mapping, check:'s, 62 lists) still parse; the 65th is refused."""
    yaml = "check:\n  x: " + "[" * 62 + "]" * 62 + "\n"
    exp = write_exp(tmp_path, GOOD, yaml=yaml)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert "nested too deeply" not in p.stdout + p.stderr
    exp = write_exp(tmp_path / "deeper", GOOD, yaml=yaml.replace("[", "[[", 1).replace("]", "]]", 1))
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert "labbox.yaml line 2: nested too deeply" in p.stdout, p.stdout


def test_a_wide_mapping_is_read_in_linear_time(tmp_path):
    """80,000 keys under sweep: (under the 1 MiB cap): the duplicate-key check compared every
    pair (minutes); `run` reads no sweep: keys, so the run goes ahead."""
    yaml = "sweep:\n" + "".join(f"  k{i:05d}: 1\n" for i in range(80_000))
    exp = write_exp(tmp_path, GOOD, yaml=yaml)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp,
               timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


def test_trailing_document_marker_is_fine(tmp_path):
    exp = write_exp(tmp_path, GOOD, yaml="args: [a]\n---\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("flag,value,needle", [
    ("--memory", "512", "too small"),
    ("--memory", "9223372036854775808", "9223372036854775808"),
    ("--disk-limit", "8388608t", "8388608t"),
])
def test_sizes_out_of_range_are_refused(tmp_path, flag, value, needle):
    exp = write_exp(tmp_path, GOOD)
    p = labbox("run", "--json", flag, value, "--python", PYTHON, "--runs-dir",
               tmp_path / "runs", exp)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in json.loads(p.stdout)["error"]["message"]


@pytest.mark.parametrize("value", ["0.001", "0.0099", "1e-300"])
@pytest.mark.parametrize("cmd", ["run", "sweep"])
def test_a_cpu_share_below_the_kernels_smallest_is_a_usage_error(tmp_path, cmd, value):
    """Below 0.01 the CPU controller takes no quota: refused before anything starts, naming
    the floor, not an infra_error (125) after the run directory was made."""
    exp = write_exp(tmp_path, GOOD)
    p = labbox(cmd, "--json", "--cpus", value, "--python", PYTHON, "--runs-dir",
               tmp_path / "runs", exp)
    assert p.returncode == 2, p.stdout + p.stderr
    msg = json.loads(p.stdout)["error"]["message"]
    assert value in msg and "0.01" in msg, msg
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    if cmd == "run" and value == "0.001":  # the floor itself runs (slowly: 1% of a CPU)
        # an ordinary user without a delegated cpu controller accepts running without it
        degraded = [] if os.geteuid() == 0 else ["--allow-degraded", "cpus"]
        p = labbox("run", "--json", "--cpus", "0.01", *degraded, "--python", PYTHON,
                   "--runs-dir", tmp_path / "runs", exp)
        assert p.returncode == 0, p.stdout + p.stderr


def test_largest_size_is_recorded_as_given(tmp_path):
    exp = write_exp(tmp_path, GOOD)
    # an ordinary user's explicit limit is polled, which must be accepted (as root it is
    # exp/'s own file system, of the disk's size at most)
    degraded = [] if os.geteuid() == 0 else ["--allow-degraded", "disk"]
    p = labbox("run", "--json", "--disk-limit", "8388607t", *degraded, "--python", PYTHON,
               "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout + p.stderr
    man = json.loads((Path(json.loads(p.stdout)["run_dir"]) / "manifest.json").read_text())
    assert man["config"]["disk_limit_bytes"] == 8388607 << 40


def test_runs_show_and_list_print_no_terminal_escapes(tmp_path):
    """A directory named with escape sequences (retitle the terminal, clear the screen)
    is shown with them escaped, never sent to the terminal."""
    name = "exp\x1b]0;pwned\x07\x1b[2J\x9b31m"
    exp = write_exp(tmp_path, 'print("accuracy: 0.5")\nprint("note\\x1b[8m: hidden")\n',
                    name=name)
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 0, p.stderr
    rid = json.loads(p.stdout)["id"]
    for args in (("runs", "show", rid), ("runs", "list")):
        q = labbox(*args, "--runs-dir", runs)
        assert q.returncode == 0, q.stderr
        out = q.stdout
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, repr(out)
    q = labbox("runs", "show", rid, "--runs-dir", runs)
    assert "\\x1b]0;pwned" in q.stdout, q.stdout


BIDI = ["\u202e", "\u2066", "\u200f", "\u061c", "\ufeff", "\u200b", "\u2028", "\u00ad",
        "\ufe0f", "\U000e0041"]


def test_summaries_show_format_characters_escaped(tmp_path):
    """A results file whose names and values hold the characters that reorder or hide text
    (U+202E shows the rest of the line reversed): the run's summary and `runs show` print
    them as \\uXXXX, never as themselves."""
    exp = write_exp(tmp_path, 'import json\nprint("accuracy: 0.5")\n'
                    'json.dump({"a\\u202eb": "\\u2066x\\u200fy\\u061cz",'
                    ' "c\\ufeff\\u200b": 1, "d\\u2028\\u00ad\\ufe0f": 2,'
                    ' "acc\\U000e0041": 3}, open("results.json", "w"))\n')
    runs = tmp_path / "runs"
    p = labbox("run", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 0, p.stderr
    assert not any(c in p.stdout + p.stderr for c in BIDI), repr(p.stdout)
    assert "a\\u202eb" in p.stdout, p.stdout
    rid = [d.name for d in runs.iterdir() if d.is_dir() and d.name[0].isdigit()][0]
    q = labbox("runs", "show", rid, "--runs-dir", runs)
    assert q.returncode == 0, q.stderr
    assert not any(c in q.stdout for c in BIDI), repr(q.stdout)
    # The record keeps the values as they were: only what a terminal is shown is escaped.
    doc = json.loads((runs / rid / "result.json").read_text())
    assert doc["metrics"]["files"]["results.json"]["a\u202eb"] == "\u2066x\u200fy\u061cz"


def test_check_shows_format_characters_in_file_names_escaped(tmp_path):
    """`labbox check` names files: one named with U+202E is shown as \\u202e to a person, and
    as itself in --json (a machine's input, valid JSON either way)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "m\u202egnp.py").write_text("import os\nos.system('true')\n")
    (exp / "main.py").write_text("print(1)\n")  # a directory run would start
    p = labbox("check", "--policy", "permissive", exp)
    assert "\u202e" not in p.stdout + p.stderr and "m\\u202egnp.py" in p.stdout, p.stdout
    q = labbox("check", "--json", "--policy", "permissive", exp)
    assert any(f["file"].endswith("m\u202egnp.py") for f in json.loads(q.stdout)["findings"])


def test_entry_point_too_large_to_check_says_why(tmp_path):
    exp = write_exp(tmp_path, "x = 1\n" * 1500000 + GOOD)
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 3, p.stderr
    assert "larger than the check's limit of 8 MiB" in p.stdout + p.stderr, p.stdout
    q = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    doc = json.loads(q.stdout)
    assert doc["status"] == "rejected" and "8 MiB" in doc["check"]["error"], doc["check"]


def test_runs_directory_too_deep_for_its_records(tmp_path):
    """A runs directory whose records would pass PATH_MAX is refused up front (exit 2, the
    reason in full), never recorded under a cut path."""
    # 4,010 to 4,060 characters, whatever the base's length: the directory itself still
    # fits PATH_MAX (4,096 with its NUL), its records below it do not.
    deep = tmp_path
    while len(str(deep)) < 3800:
        deep = deep / ("d" * 200)
    deep = deep / ("d" * (4040 - len(str(deep)) - 1))
    assert 4010 <= len(str(deep)) <= 4060
    deep.mkdir(parents=True)
    exp = write_exp(tmp_path, GOOD)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", deep / "runs", exp)
    assert p.returncode == 2, p.stdout[-1000:] + p.stderr[-1000:]
    assert "PATH_MAX" in json.loads(p.stdout)["error"]["message"]


@pytest.mark.parametrize("how", ["flag", "yaml"])
def test_a_mode_this_labbox_lacks_is_refused(tmp_path, how):
    """No mode falls back to another: a backend this build does not have is a usage error
    naming it, and nothing runs."""
    exp = write_exp(tmp_path, GOOD, yaml="mode: kubernetes\n" if how == "yaml" else None)
    args = ["--mode", "kubernetes"] if how == "flag" else []
    p = labbox("run", "--json", *args, "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 2, p.stdout + p.stderr
    msg = json.loads(p.stdout)["error"]["message"]
    assert "kubernetes" in msg and "local" in msg, msg
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_local_mode_is_recorded_and_repeated(tmp_path):
    exp = write_exp(tmp_path, GOOD, yaml="mode: local\n")
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["backend"]["name"] == "local" and doc["backend"]["isolated_by"] == "labbox"
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["config"]["mode"] == "local"
    q = labbox("rerun", "--json", "--runs-dir", runs, doc["id"])
    assert q.returncode == 0, q.stdout + q.stderr


def test_python_linked_out_of_the_experiment_is_checked_and_hashed(tmp_path):
    """A module the experiment imports through a symbolic link to a file outside it is staged
    by its content: the static check reads it, the manifest hashes it."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "helper.py").write_text("import os\nos.system('true')\nVAL = 1\n")
    exp = write_exp(tmp_path, "import sys\nsys.path.insert(0, 'pkg')\nimport helper\n"
                    "print('accuracy:', helper.VAL)\n")
    (exp / "pkg").mkdir()
    (exp / "pkg" / "helper.py").symlink_to(outside / "helper.py")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    doc = json.loads(p.stdout)
    assert p.returncode == 3 and doc["status"] == "rejected", doc["status"]
    assert any(f["file"] == "pkg/helper.py" and f["severity"] == "error" for f in doc["findings"])
    staged = Path(doc["run_dir"]) / "exp" / "pkg" / "helper.py"
    assert staged.is_file() and not staged.is_symlink()
    import hashlib
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert man["files"]["pkg/helper.py"] == hashlib.sha256(staged.read_bytes()).hexdigest()


def test_results_of_many_small_objects_are_refused_not_parsed(tmp_path):
    exp = write_exp(tmp_path, "import json\n"
                    "json.dump({f'k{i}': {'a': [{}]} for i in range(300000)}, open('results.json', 'w'), separators=(',', ':'))\n"
                    "print('accuracy: 1')\n")
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    doc = json.loads(p.stdout)
    issues = [i for i in doc["metric_issues"] if i.get("where") == "results.json"]
    assert issues and "more than the" in issues[0]["message"], doc["metric_issues"]
    assert len(p.stdout) < 1 << 20


def test_rerun_compares_values_whose_dotted_paths_collide(tmp_path):
    exp = write_exp(tmp_path, "import json, random\n"
                    "json.dump({'a.b': 5, 'a': {'b': random.random()}}, open('results.json', 'w'))\n"
                    "print('accuracy: 1')\n")
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, exp)
    rid = json.loads(p.stdout)["id"]
    q = labbox("rerun", "--json", "--runs-dir", runs, rid)
    r = json.loads(q.stdout)
    r = r.get("rerun", r)
    assert r["verdict"] == "differ", r


def test_cpus_beyond_the_host_set_no_more_threads_than_cores(tmp_path):
    exp = write_exp(tmp_path, "import os\nprint('threads:', os.environ['OMP_NUM_THREADS'])\n"
                    "print('accuracy: 1')\n")
    p = labbox("run", "--json", "--cpus", "1000", "--allow-degraded", "cpus", "--python", PYTHON,
               "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stdout[-1000:] + p.stderr[-1000:]
    threads = json.loads(p.stdout)["metrics"]["values"]["threads"]
    assert threads <= len(os.sched_getaffinity(0)), threads


def test_json_flag_before_the_command(tmp_path):
    p = labbox("--json", "run", tmp_path / "missing")
    assert p.returncode == 2
    doc = json.loads(p.stdout)
    assert doc["command"] == "run" and "does not exist" in doc["error"]["message"]


def test_a_linked_labbox_yaml_is_named_as_a_link(tmp_path):
    exp = write_exp(tmp_path, GOOD)
    (tmp_path / "real.yaml").write_text("budget: 5\n")
    (exp / "labbox.yaml").symlink_to(tmp_path / "real.yaml")
    p = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 2 and "symbolic link" in p.stderr, p.stderr
    assert "Too many levels" not in p.stderr


def test_a_number_of_hundreds_of_digits_is_read_not_dropped(tmp_path):
    """A value too long for the parser's buffer was dropped with the line, and the run was
    told it printed no such line."""
    exp = write_exp(tmp_path, 'print("accuracy: " + "9" * 600)\nprint("loss: 0." + "1" * 700)\n')
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    doc = json.loads(p.stdout)
    assert p.returncode == 4, doc
    assert [i["kind"] for i in doc["metric_issues"] if i.get("metric") == "accuracy"] == ["inf"]
    assert abs(doc["metrics"]["values"]["loss"] - 0.1111111111) < 1e-9, doc["metrics"]


def test_json_never_carries_a_raw_c1_control(tmp_path):
    """U+0080..U+009F are CSI, OSC and DCS in one character to some terminals: a results
    file's key or a condition name holding them must reach --json escaped (the same
    document), not as the raw bytes a terminal would obey."""
    exp = write_exp(tmp_path, 'import json\n'
                              'json.dump({"acc\\u009d52;c;cm0gLXJmIH4=\\u0007x\\u009b2J": 0.5}, '
                              'open("results.json", "w"))\nprint("accuracy: 0.5")\n')
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs", exp)
    raw = p.stdout.encode()
    assert b"\xc2\x9d" not in raw and b"\xc2\x9b" not in raw, raw[:800]
    doc = json.loads(p.stdout)
    keys = list(doc["metrics"]["files"]["results.json"])
    assert keys and "\u009b" in keys[0], doc["metrics"]
    text = open(Path(doc["run_dir"]) / "result.json", "rb").read()
    assert b"\xc2\x9b" not in text and b"\\u009b" in text


@pytest.mark.parametrize("value", ["bogus", "", "0,,1", "all,0", "1;2", "0,0", "-1", " 1"])
def test_a_malformed_gpus_value_is_a_usage_error_on_any_host(tmp_path, value):
    """A --gpus typo is the caller's mistake whatever the host has: exit 2 naming the value
    before anything is staged, never "no NVIDIA GPU on this host" (125, a host problem) nor a
    count of commas sent to Slurm."""
    exp = write_exp(tmp_path, GOOD)
    runs = tmp_path / "runs"
    calls = [
        ("run", "--json", "--python", PYTHON, "--runs-dir", runs, "--gpus", value, exp),
        ("run", "--json", "--mode", "slurm", "--runs-dir", runs, "--gpus", value, exp),
        ("exec", "--json", "--gpus", value, "--", "/bin/true"),
        ("sweep", "--json", "--plan-only", "--seeds", "0", "--runs-dir", runs,
         "--gpus", value, exp),
    ]
    for call in calls:
        p = labbox(*call)
        assert p.returncode == 2, (call, p.stdout, p.stderr)
        doc = json.loads(p.stdout)
        assert doc["schema"] == "labbox.error/1" and doc["exit_code"] == 2, doc
        msg = doc["error"]["message"]
        assert msg.startswith("--gpus '%s'" % value) and "NVIDIA" not in msg, (call, msg)
    assert not runs.exists() or not list(runs.iterdir())


def test_well_formed_gpus_values_pass_the_parse(tmp_path):
    """none is no GPU, and runs; an index list is judged against the host, not refused as a
    typo (here a host without the GPU: 125 naming it, or 0 where it is there)."""
    exp = write_exp(tmp_path, GOOD)
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", tmp_path / "runs",
               "--gpus", "none", exp)
    assert p.returncode == 0, p.stdout + p.stderr
    assert json.loads(p.stdout)["status"] == "completed"
    p = labbox("exec", "--gpus", "0,3", "--", "/bin/true")
    if any(n.startswith("nvidia") and n[6:].isdigit() for n in os.listdir("/dev")):
        assert p.returncode in (0, 125), p.stderr
    else:
        assert p.returncode == 125 and "no NVIDIA GPU" in p.stderr, p.stderr


BACKEND_FLAGS = [
    (("--host", "gpu-server"), "ssh"), (("--install-remote",), "ssh"),
    (("--remote-labbox", "/opt/labbox"), "ssh"),
    (("--partition", "gpu"), "slurm"), (("--account", "proj"), "slurm"), (("--qos", "high"), "slurm"),
    (("--drive", "/tmp"), "colab"), (("--colab-poll", "3"), "colab"),
    (("--colab-timeout", "60"), "colab"), (("--colab-stale", "60"), "colab"),
    (("--image", "foo"), "docker"), (("--engine", "docker"), "docker"),
]


@pytest.mark.parametrize("flags,needs", BACKEND_FLAGS, ids=[f[0][0] for f in BACKEND_FLAGS])
def test_a_flag_of_another_backend_is_refused_not_ignored(tmp_path, flags, needs):
    """`run --partition gpu exp` without --mode slurm ran on this host (the login node), exit 0,
    recorded as mode local: every backend's flag outside its mode is a usage error naming the
    flag and the mode it needs, before anything is staged or the GPUs are looked for."""
    exp = write_exp(tmp_path, GOOD)
    runs = tmp_path / "runs"
    p = labbox("run", "--json", "--python", PYTHON, "--runs-dir", runs, "--gpus", "0", *flags, exp)
    assert p.returncode == 2, p.stdout + p.stderr
    msg = json.loads(p.stdout)["error"]["message"]
    assert msg == "%s applies to --mode %s only (this run's mode is local)" % (flags[0], needs), msg
    assert not runs.exists() or not list(runs.iterdir())
    # labbox.yaml's mode: is the run's mode as --mode is
    other = "docker" if needs != "docker" else "slurm"
    (exp / "labbox.yaml").write_text("mode: %s\n" % other)
    p = labbox("run", "--runs-dir", runs, *flags, exp)
    assert p.returncode == 2 and "applies to --mode %s only (this run's mode is %s)" % (
        needs, other) in p.stderr, p.stderr


def test_sweep_exec_and_probe_refuse_another_backends_flags(tmp_path):
    exp = write_exp(tmp_path, GOOD)
    runs = tmp_path / "runs"
    for flags, msg in [
            (("--partition", "gpu"), "--partition applies to --mode slurm only (this sweep's mode is local)"),
            (("--image", "foo"), "--image applies to --mode docker only (this sweep's mode is local)"),
            (("--mode", "slurm", "--engine", "docker"),
             "--engine applies to --mode docker only (this sweep's mode is slurm)")]:
        p = labbox("sweep", "--plan-only", "--seeds", "0", "--runs-dir", runs, *flags, exp)
        assert p.returncode == 2 and msg in p.stderr, (flags, p.stderr)
    p = labbox("exec", "--engine", "docker", "--", "/bin/true")
    assert p.returncode == 2 and "--engine applies to --mode docker only" in p.stderr, p.stderr
    for flags, msg in [(("--host", "h"), "--host applies to --mode ssh only (this probe's mode is local)"),
                       (("--mode", "docker", "--drive", "/tmp"),
                        "--drive applies to --mode colab only (this probe's mode is docker)")]:
        p = labbox("probe", *flags)
        assert p.returncode == 2 and msg in p.stderr, (flags, p.stderr)


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_an_interpreter_that_never_answers_its_probe_is_an_error_naming_it(tmp_path, cmd):
    # a pyenv shim waiting on a lock, a venv on a stale network mount: labbox's probe of
    # --python is bounded (60 s, as the confined probe), what it started is killed, and the
    # error names the interpreter; never a labbox that waits forever past --budget
    exp = write_exp(tmp_path, GOOD)
    pids = tmp_path / "pids"
    hang = tmp_path / "hangpy"
    hang.write_text(f"#!/bin/sh\nsleep 600 &\necho $! >> {pids}\necho $$ >> {pids}\nwait\n")
    hang.chmod(0o755)
    args = (["run", "-q", "--budget", "2", "--runs-dir", tmp_path / "runs"] if cmd == "run"
            else ["check"])
    try:
        p = labbox(*args, "--python", hang, exp, timeout=120)
        assert p.returncode == 2, (p.returncode, p.stderr)
        assert f"interpreter '{hang}' did not answer its probe in 60 s" in p.stderr, p.stderr
        left = [int(x) for x in pids.read_text().split()]
        assert len(left) == 2
        alive = [x for x in left if os.path.exists(f"/proc/{x}")
                 and "Z" not in Path(f"/proc/{x}/stat").read_text().split(") ")[-1][:1]]
        assert not alive, f"the probe's processes outlived it: {alive}"
        assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    finally:
        for x in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(x), 9)
            except ProcessLookupError:
                pass
