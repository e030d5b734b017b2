"""R and Octave experiments through `labbox run`: real Rscript (r-base-core, r-cran-jsonlite)
and octave-cli (octave). Metrics collected, a crash classified, a banned call rejected, a
missing seed warned, the environment recorded, a budget ending the run with partial results,
and the examples run end to end."""
import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, labbox

RSCRIPT = shutil.which("Rscript")
OCTAVE = shutil.which("octave-cli")
need_r = pytest.mark.skipif(not RSCRIPT, reason="Rscript (r-base-core) is not installed: scripts/deps installs it")
need_octave = pytest.mark.skipif(not OCTAVE, reason="octave-cli (octave) is not installed: scripts/deps installs it")


def exp(tmp_path, name, files):
    d = tmp_path / name
    d.mkdir()
    for rel, text in files.items():
        (d / rel).write_text(textwrap.dedent(text).lstrip("\n"))
    return d


def run(tmp_path, d, *flags):
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", *flags, d)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        raise AssertionError(f"no JSON document (exit {p.returncode}): {p.stdout[-500:]} {p.stderr[-1500:]}")
    return p, doc


def finding_ids(doc):
    return {f["id"] for f in doc.get("findings", [])}


# --- R ------------------------------------------------------------------------------------------

@need_r
def test_r_example_runs_end_to_end(tmp_path):
    p, doc = run(tmp_path, REPO / "examples" / "r-quickstart")
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc.get("failure"))
    conds = doc["metrics"]["conditions"]
    assert set(conds) == {"lambda_0.01", "lambda_1", "lambda_100"}, conds
    assert conds["lambda_1"]["test_mse"] > 0
    assert "results.json" in doc["metrics"]["files"]
    assert doc["check"]["syntax_by"].startswith("R "), doc["check"]
    man = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())
    assert json.dumps(man).count('"language": "r"') == 1, "the manifest does not name the language"
    env = (Path(doc["run_dir"]) / "environment.txt").read_text()
    assert env.startswith("R "), env[:200]
    assert "jsonlite==" in env and "base==" in env, env[:800]


@need_r
def test_r_banned_call_is_rejected_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    d = exp(tmp_path, "r_banned", {"main.R": f"""
        set.seed(1)
        cat("accuracy: 1\\n")
        f <- get("system")
        system("touch {marker}")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3 and doc["status"] == "rejected", doc["status"]
    assert {"LB101", "LB111"} <= finding_ids(doc), doc["findings"]
    assert not marker.exists()


@need_r
def test_r_code_from_strings_and_the_network_are_rejected(tmp_path):
    d = exp(tmp_path, "r_eval", {"main.R": """
        set.seed(1)
        eval(parse(text = "1 + 1"))
        download.file("https://example.org/data.csv", "data.csv")
        cat("accuracy: 1\\n")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3, doc["status"]
    assert {"LB103", "LB105"} <= finding_ids(doc), doc["findings"]


@need_r
def test_r_syntax_error_names_the_line(tmp_path):
    d = exp(tmp_path, "r_syntax", {"main.R": "x <- 1\ny <- (2 +\ncat('accuracy: 1\\n')\n"})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3
    syn = [f for f in doc["findings"] if f["id"] == "LB001"]
    assert syn and syn[0]["file"] == "main.R" and syn[0]["line"] >= 2, doc["findings"]


@need_r
def test_r_missing_seed_is_warned_and_metrics_collected(tmp_path):
    d = exp(tmp_path, "r_seed", {"main.R": """
        x <- runif(10)
        cat(sprintf("mean_x: %.3f\\n", mean(x)))
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0, (doc["status"], doc.get("failure"))
    assert "LB302" in finding_ids(doc), doc["findings"]
    assert 0 < doc["metrics"]["values"]["mean_x"] < 1


@need_r
def test_r_print_of_a_string_is_its_metric_line(tmp_path):
    # print(paste(...)) is how R code prints a result: [1] "accuracy: 0.93". The check's
    # LB404 counts the string; the collector reads the line between the quotes.
    d = exp(tmp_path, "rprint", {"main.R": '''
        acc <- 0.93
        print(paste("accuracy:", acc))
        print(paste0("loss: ", round(0.2134, 3)))
        print(c("a: 1", "b: 2"))
    '''})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0, doc
    assert "LB404" not in finding_ids(doc)
    assert doc["status"] == "completed"
    assert doc["metrics"]["values"] == {"accuracy": 0.93, "loss": 0.213}, doc["metrics"]


@need_r
def test_r_missing_package_is_classified(tmp_path):
    d = exp(tmp_path, "r_pkg", {"main.R": """
        set.seed(1)
        library(notapackageanywhere)
        cat("accuracy: 1\\n")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed"
    f = doc["failure"]
    assert f["class"] == "missing_package", f
    assert "notapackageanywhere" in f["summary"], f
    assert any("notapackageanywhere" in e for e in f["evidence"]), f


@need_r
def test_r_install_at_run_time_is_the_missing_package(tmp_path):
    """`if (!requireNamespace("x", quietly = TRUE)) install.packages("x")`: in the sandbox the
    library is read-only and there is no network, so the installer's error is the package
    that is not installed, with the Debian package that provides it."""
    d = exp(tmp_path, "r_install", {"main.R": """
        if (!requireNamespace("NotAPackageAnywhere", quietly = TRUE)) install.packages("NotAPackageAnywhere")
        library(NotAPackageAnywhere)
        cat("accuracy: 1\\n")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed"
    f = doc["failure"]
    assert f["class"] == "missing_package", f
    assert "'NotAPackageAnywhere'" in f["summary"], f
    assert f["escalation"]["grants"] == "environment", f
    assert f["escalation"]["environment"] == "apt install r-cran-notapackageanywhere", f


@need_r
def test_r_error_is_a_code_error_with_its_line(tmp_path):
    d = exp(tmp_path, "r_err", {"main.R": """
        set.seed(1)
        cat("accuracy: 0.5\\n")
        stop("the input has 3 columns, 4 expected")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1
    f = doc["failure"]
    assert f["class"] == "code_error" and "3 columns, 4 expected" in f["summary"], f
    assert doc["metrics"]["values"]["accuracy"] == 0.5


@need_r
def test_r_budget_keeps_partial_results(tmp_path):
    d = exp(tmp_path, "r_budget", {"main.R": """
        set.seed(1)
        cat("loss: 0.9\\n")
        jsonlite::write_json(list(partial_loss = 0.9), "results.json", auto_unbox = TRUE)
        Sys.sleep(60)
        cat("loss: 0.1\\n")
        """})
    p, doc = run(tmp_path, d, "--budget", "3")
    assert p.returncode == 124 and doc["status"] == "timeout", doc["status"]
    assert doc["metrics"]["values"]["loss"] == 0.9
    assert doc["metrics"]["files"]["results.json"]["partial_loss"] == 0.9


def test_a_missing_interpreter_names_its_package(tmp_path):
    d = exp(tmp_path, "r_missing", {"main.R": "cat('accuracy: 1\\n')\n"})
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", "--interpreter",
               tmp_path / "no-such-Rscript", d)
    assert p.returncode == 2, p.stdout + p.stderr
    err = json.loads(p.stdout)
    assert "no-such-Rscript" in json.dumps(err), err
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", "--python", "/usr/bin/python3", d)
    assert p.returncode == 2 and "--interpreter" in p.stdout, p.stdout


# --- Octave -------------------------------------------------------------------------------------

@need_octave
def test_octave_example_runs_end_to_end(tmp_path):
    p, doc = run(tmp_path, REPO / "examples" / "octave-quickstart")
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc.get("failure"))
    assert set(doc["metrics"]["conditions"]) == {"lambda_0.01", "lambda_1", "lambda_100"}
    assert doc["metrics"]["files"]["results.json"]["best_test_mse"] > 0
    assert doc["check"]["syntax_by"].startswith("Octave "), doc["check"]
    env = (Path(doc["run_dir"]) / "environment.txt").read_text()
    assert env.startswith("Octave "), env[:200]


@need_octave
def test_octave_banned_calls_are_rejected_and_never_run(tmp_path):
    marker = tmp_path / "ran"
    d = exp(tmp_path, "m_banned", {"main.m": f"""
        rand("seed", 1);
        printf("accuracy: 1\\n");
        % system("comment only") is not a call
        s = 'system in a string is data';
        unix("touch {marker}");
        eval("x = 1;");
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3 and doc["status"] == "rejected", doc["status"]
    found = [(f["id"], f["line"]) for f in doc["findings"] if f["id"] in ("LB101", "LB103")]
    assert ("LB101", 5) in found and ("LB103", 6) in found, doc["findings"]
    assert not any(line in (3, 4) for _, line in found), found
    assert not marker.exists()


@need_octave
def test_octave_syntax_error_and_missing_seed(tmp_path):
    d = exp(tmp_path, "m_syntax", {"main.m": "x = [1, 2;\nprintf('accuracy: 1\\n');\n"})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3
    assert "LB001" in finding_ids(doc), doc["findings"]
    d = exp(tmp_path, "m_seed", {"main.m": "x = rand(3, 1);\nprintf('mean_x: %.3f\\n', mean(x));\n"})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0, (doc["status"], doc.get("failure"))
    assert "LB302" in finding_ids(doc), doc["findings"]
    # a transpose is not a string: no finding hides behind it
    d = exp(tmp_path, "m_transpose", {"main.m": "rand('seed', 1);\na = [1 2]'; b = a'; system('ls')\nprintf('accuracy: 1\\n');\n"})
    p, doc = run(tmp_path, d)
    assert p.returncode == 3 and "LB101" in finding_ids(doc), doc["findings"]


@need_octave
def test_octave_error_is_classified_with_evidence(tmp_path):
    d = exp(tmp_path, "m_err", {"main.m": """
        rand("seed", 1);
        printf("accuracy: 0.25\\n");
        x = undefined_function_of_the_experiment(3);
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed"
    f = doc["failure"]
    assert f["class"] == "code_error", f
    assert "undefined_function_of_the_experiment" in f["summary"], f
    assert doc["metrics"]["values"]["accuracy"] == 0.25


@need_octave
def test_a_quiet_octave_exit_is_not_said_in_pythons_words(tmp_path):
    """An Octave script that exits 3 with no error message: the summary speaks of Octave, not
    of a Python traceback it never could have printed."""
    d = exp(tmp_path, "m_exit", {"main.m": """
        rand("seed", 1);
        printf("accuracy: 0.7\\n");
        exit(3);
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["exit_code"] == 3, doc
    f = doc["failure"]
    assert "Python" not in f["summary"] and "Octave" in f["summary"], f


@need_octave
def test_octave_entry_that_starts_with_a_function_is_named_a_function_file(tmp_path):
    """main.m whose first statement is a function definition: Octave runs it as a function
    file, calls that function with no arguments and never runs the script's lines; its own
    warning says so. The verdict keeps that warning as evidence and says to make the file a
    script (1; first), not to fix the line the symptom names."""
    d = exp(tmp_path, "m_fnfile", {"main.m": """
        function check_data(X, y)
          if rows(X) ~= numel(y)
            error("check_data: X has %d rows but y has %d elements", rows(X), numel(y));
          end
        end
        X = rand(10, 3);
        y = rand(10, 1);
        check_data(X, y);
        printf("mse: %.3f\\n", 0.1);
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed", doc
    f = doc["failure"]
    assert f["class"] == "code_error", f
    assert any("does not agree with function filename" in e for e in f["evidence"]), f
    assert "function file" in f["summary"] and "check_data" in f["summary"], f
    assert "1;" in f["suggestion"] and "fix the error at the line" not in f["suggestion"], f


@need_octave
def test_octave_code_location_is_the_experiments_frame(tmp_path):
    """An error raised inside one of Octave's own functions (strsplit): Octave lists that
    function's frame first; the experiment's line is the first frame of its own .m files,
    here a helper in a subdirectory called from main."""
    d = exp(tmp_path, "m_lib", {"main.m": """
        addpath("lib");
        printf("accuracy: 0.25\\n");
        parts = split_all(1);
        """})
    (d / "lib").mkdir()
    (d / "lib" / "split_all.m").write_text('function p = split_all(x)\n  p = strsplit(x, ",");\nend\n')
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed"
    cl = doc["failure"]["code_location"]
    assert cl == {"file": "lib/split_all.m", "line": 2, "function": "split_all"}, doc["failure"]


@need_octave
@pytest.mark.skipif(shutil.which("gnuplot") is not None,
                    reason="gnuplot is installed: octave-cli has a graphics toolkit here")
def test_octave_figure_without_a_graphics_toolkit_is_the_environments(tmp_path):
    """octave-cli draws (to files too) through gnuplot; without it `figure` fails with "no
    graphics toolkits are available!". That is the environment's, not a bug at the figure
    line: the verdict names gnuplot to install, and still points at the experiment's line."""
    d = exp(tmp_path, "m_plot", {"main.m": """
        rand("seed", 1);
        printf("accuracy: 0.25\\n");
        h = figure("visible", "off");
        plot(1:3, [1 4 9]);
        print(h, "curve.png", "-dpng");
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 1 and doc["status"] == "failed"
    f = doc["failure"]
    assert f["class"] == "wrong_env", f
    assert "gnuplot" in f["summary"] and "apt install gnuplot-nox" in f["suggestion"], f
    assert f["escalation"]["environment"] == "gnuplot", f
    assert f["code_location"] == {"file": "main.m", "line": 3, "function": "main"}, f
    assert doc["metrics"]["values"]["accuracy"] == 0.25


@need_octave
def test_octave_budget_keeps_partial_results_and_no_workspace_dump(tmp_path):
    d = exp(tmp_path, "m_budget", {"main.m": """
        rand("seed", 1);
        big = rand(200, 200);
        printf("loss: 0.75\\n");
        fflush(stdout);
        pause(60);
        printf("loss: 0.1\\n");
        """})
    p, doc = run(tmp_path, d, "--budget", "3")
    assert p.returncode == 124 and doc["status"] == "timeout", doc["status"]
    assert doc["metrics"]["values"]["loss"] == 0.75
    assert not (Path(doc["run_dir"]) / "exp" / "octave-workspace").exists()


@need_octave
def test_octave_pause_for_a_key_does_not_wait_out_the_budget(tmp_path):
    """A course's script stops for the reader ("Press enter to continue." then a bare
    `pause`): there is no terminal in the sandbox, and the run goes on instead of waiting
    out its budget. A timed pause still waits (the budget test above relies on it)."""
    d = exp(tmp_path, "m_pause", {"main.m": """
        rand("seed", 1);
        printf("Program paused. Press enter to continue.\\n");
        pause;
        pause(Inf);
        tic; pause(0.3); waited = toc;
        printf("waited: %.2f\\n", waited >= 0.25);
        printf("acc: 0.91\\n");
        """})
    p, doc = run(tmp_path, d, "--budget", "60")
    assert p.returncode == 0 and doc["status"] == "completed", doc["status"]
    assert doc["metrics"]["values"] == {"waited": 1, "acc": 0.91}, doc["metrics"]


@need_r
def test_r_rerun_repeats_it_with_the_same_interpreter(tmp_path):
    p, doc = run(tmp_path, REPO / "examples" / "r-quickstart", "--interpreter", RSCRIPT)
    assert p.returncode == 0, doc["status"]
    q = labbox("rerun", "--json", "--runs-dir", tmp_path / "runs", doc["id"])
    assert q.returncode == 0, q.stdout[-1500:] + q.stderr[-1500:]
    again = json.loads(q.stdout)
    assert again["status"] == "completed"
    assert again["rerun"]["verdict"] == "match", again["rerun"]
    man = json.loads((Path(again["run_dir"]) / "manifest.json").read_text())
    assert man["interpreter"]["path"] == os.path.realpath(RSCRIPT)
    assert man["interpreter"]["named_by"] == "command line"


# --- metric forms of the language (tenth session) -------------------------------------------

@need_octave
def test_octave_display_of_a_variable_is_its_metric(tmp_path):
    # `acc = mean(...)` without a semicolon displays "acc = 0.7500": Octave's print. `ans`
    # names no metric, a matrix or a string display is not a number.
    d = exp(tmp_path, "m_display", {"main.m": """
        rand('seed', 1);
        acc = mean([1 1 0 1])
        mean([1 2])
        m = [1 2; 3 4]
        s = 'done'
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0, (doc["status"], doc.get("metric_issues"), doc.get("failure"))
    assert doc["status"] == "completed"
    assert doc["metrics"]["values"] == {"acc": 0.75}, doc["metrics"]


@need_r
def test_r_na_is_a_missing_value_not_a_label(tmp_path):
    # cat("accuracy:", NA) prints "accuracy: NA": a value R could not compute, flagged as NaN
    # is, never the label "NA" of a completed run.
    d = exp(tmp_path, "r_na", {"main.R": """
        set.seed(1)
        acc <- mean(c(1, NA, 0))
        cat("accuracy:", acc, "\\n")
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 4, (doc["status"], doc["metrics"])
    assert doc["status"] == "invalid_metrics"
    assert [i["kind"] for i in doc["metric_issues"]] == ["nan"], doc["metric_issues"]
    assert doc["metrics"]["values"] == {"accuracy": "NaN"}


@need_r
def test_r_na_in_results_files_is_a_missing_number(tmp_path):
    # write.csv writes NA and NaN as NA, jsonlite a numeric NA as "NA": in a column or an
    # array of numbers (or a declared metric) that is a missing number, flagged; a quoted
    # "NA" in a text column stays a label.
    d = exp(tmp_path, "r_na_files", {"main.R": """
        set.seed(1)
        res <- data.frame(fold = 1:3, acc = c(0.81, NA, 0.79), loss = c(0.2, NaN, 0.3),
                          region = c("EU", "NA", "US"))
        write.csv(res, "results.csv", row.names = FALSE)
        jsonlite::write_json(list(mean_acc = 0.8, acc = c(0.81, NA, 0.79)), "results.json",
                             auto_unbox = TRUE, digits = NA)
        cat("mean_acc:", mean(res$acc, na.rm = TRUE), "\\n")
        """})
    p, doc = run(tmp_path, d, "--metrics", "acc")
    assert p.returncode == 4 and doc["status"] == "invalid_metrics", (doc["status"], doc["metric_issues"])
    where = sorted(i["where"] for i in doc["metric_issues"] if i["kind"] == "nan")
    assert where == ["results.csv at [1].acc", "results.csv at [1].loss", "results.json at acc[1]"], doc["metric_issues"]
    assert all("written as NA" in i["message"] for i in doc["metric_issues"]), doc["metric_issues"]
    rows = doc["metrics"]["files"]["results.csv"]
    assert [r["region"] for r in rows] == ["EU", "NA", "US"], rows
    assert rows[1]["acc"] == "NaN", rows


@need_r
def test_r_na_label_column_keeps_its_label(tmp_path):
    d = exp(tmp_path, "r_na_label", {"main.R": """
        set.seed(1)
        write.csv(data.frame(model = c("lm", NA), note = c("NA", "x"), acc = c(0.9, 0.8)),
                  "results.csv", row.names = FALSE)
        """})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc["metric_issues"])
    assert doc["metrics"]["files"]["results.csv"][1]["model"] == "NA"


def test_python_na_cell_stays_a_label(tmp_path):
    d = exp(tmp_path, "py_na", {"main.py": """
        import csv
        with open("results.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["fold", "acc"])
            w.writerows([[1, 0.8], [2, "NA"]])
        """})
    p, doc = run(tmp_path, d, "--python", shutil.which("python3") or "/usr/bin/python3")
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc["metric_issues"])
    assert doc["metrics"]["files"]["results.csv"][1]["acc"] == "NA"


@need_octave
@pytest.mark.parametrize("policy", ["standard", "permissive"])
def test_octave_function_of_a_missing_forge_package(tmp_path, policy):
    # normpdf is Octave Forge's statistics package. Octave's missing-function hook formats
    # its message with makeinfo (perl), which the exec guard kills under standard: that is
    # not the experiment's program, and the package is the cause under both policies.
    if Path("/usr/share/octave/packages/statistics").exists() or any(
            Path("/usr/share/octave/packages").glob("statistics-*")):
        pytest.skip("the statistics package is installed here")
    d = exp(tmp_path, "oct_forge", {"main.m": """
        rand("seed", 1);
        y = normpdf(0.5);
        printf("acc: %f\\n", y);
        """})
    p, doc = run(tmp_path, d, "--policy", policy)
    f = doc["failure"]
    assert doc["status"] == "failed" and f["class"] == "missing_package", (f, [x for x in doc.get("findings", []) if x.get("rejects")])
    assert "Octave package 'statistics'" in f["summary"], f
    assert "pkg load statistics" in f["suggestion"] and "apt install octave-statistics" in f["suggestion"], f
    assert "normpdf" in f["summary"], f
    assert (f.get("code_location") or {}).get("line") == 2, f


# --- what R and Octave have in place of a runtime gate ---------------------------------------------

@pytest.mark.parametrize("lang", ["r", "octave"])
def test_r_and_octave_never_run_a_program_the_run_wrote(tmp_path, lang):
    """R and Octave have the static check and the sandbox, no runtime gate: a shell reached
    by a computed name runs in the sandbox, but a program (or a shared object) the run wrote
    into exp/ or /tmp never runs: every place it can write is noexec under the standard
    policy. Checked from the host, in the run's exp/."""
    if not (RSCRIPT if lang == "r" else OCTAVE):
        pytest.skip("the interpreter is not installed: scripts/deps installs it")
    sh = ("printf '#!/bin/sh\\\\necho exec-ok\\\\n' > x.sh; chmod +x x.sh; "
          "cp x.sh /tmp/y.sh; echo shell-ran > marker; ./x.sh >> marker; /tmp/y.sh >> marker")
    if lang == "r":
        files = {"main.R": f"""
            set.seed(1)
            f <- match.fun(paste0("sys", "tem"))
            f("{sh}")
            cat("accuracy: 0.5\\n")
            """}
    else:
        files = {"main.m": f"""
            rand("seed", 1);
            n = ["sys" "tem"];
            builtin(n, "{sh}");
            printf("accuracy: 0.5\\n");
            """}
    d = exp(tmp_path, lang, files)
    p, doc = run(tmp_path, d)
    marker = Path(doc["run_dir"]) / "exp" / "marker"
    text = marker.read_text() if marker.exists() else ""
    assert "exec-ok" not in text, (text, doc.get("status"))
    # the run itself is not broken by it: the shell ran, the metric is there
    assert "shell-ran" in text and doc["metrics"]["values"]["accuracy"] == 0.5, doc


@pytest.mark.parametrize("var", ["OCTAVE_SITE_INITFILE", "R_PROFILE_USER", "R_LIBS_USER",
                                 "BASH_ENV"])
def test_start_up_files_of_r_and_octave_named_by_a_sweep_are_refused(tmp_path, var):
    """A sweep's env is the experiment's own configuration: a variable that makes R or
    Octave run a file before the experiment's first line (one the check never read) is
    refused before anything runs, as the PYTHON and loader variables are."""
    d = exp(tmp_path, "e", {"main.m": 'printf("accuracy: 1\\n");\n', "init.txt": "system('id');\n",
                            "labbox.yaml": f"sweep:\n  seeds: [0]\n  env:\n    {var}: init.txt\n"})
    p = labbox("sweep", "--json", "--runs-dir", tmp_path / "runs", d)
    assert p.returncode == 2, (p.returncode, p.stdout[-1500:], p.stderr[-1500:])
    assert var in p.stdout + p.stderr, (p.stdout[-1500:], p.stderr[-1500:])
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())

# --- what the record says of a gate R and Octave never have ---------------------------------

@pytest.mark.parametrize("lang,entry,code,label", [
    pytest.param("R", "main.R", 'set.seed(1)\ncat("slope: 2\\n")\n', "R", marks=need_r, id="R"),
    pytest.param("Octave", "main.m", 'rand("seed", 1);\nprintf("slope: 2\\n");\n', "Octave",
                 marks=need_octave, id="Octave"),
])
def test_a_run_in_another_language_records_no_python_gate(tmp_path, lang, entry, code, label):
    # The runtime gate is a Python audit hook. A reader of the record (or a pipeline that
    # flags mode "on" with installed false, which for Python means a gate that broke) must
    # read that the language has none, not that an old Python or a broken gate lost it.
    d = exp(tmp_path, f"{entry}_gate", {entry: code})
    p, doc = run(tmp_path, d)
    assert p.returncode == 0 and doc["status"] == "completed", (doc["status"], doc.get("failure"))
    g = doc["runtime_gate"]
    assert g["mode"] == "off" and g["installed"] is False and g["channel"] == "none", g
    assert "Python 3.8" not in g["note"] and "never reported" not in g["note"], g["note"]
    assert lang in g["note"] and "no runtime gate" in g["note"], g["note"]
    s = labbox("runs", "show", "--runs-dir", tmp_path / "runs", doc["id"])
    assert s.returncode == 0, s.stderr
    path = json.loads((Path(doc["run_dir"]) / "manifest.json").read_text())["interpreter"]["path"]
    interp = [l.split() for l in s.stdout.splitlines() if f"({path})" in l]
    assert interp and interp[0][0] == label, s.stdout
    assert not any(l.strip().startswith("python") for l in s.stdout.splitlines()), s.stdout
