"""Real research output through the real binary (issue 9): log and progress lines are not
metrics, the shapes research code prints are, a run that reports nothing is not `completed`,
and the static check's LB404 agrees with the collector."""
import json

import pytest

from conftest import labbox, run_exp, write_exp

# An AI-Scientist template: argparse --out_dir, final_info.json, torch-like log lines.
AI_SCIENTIST = '''
    import argparse, json, os, logging, sys
    logging.basicConfig(level=logging.INFO, stream=sys.stdout)
    p = argparse.ArgumentParser()
    p.add_argument("--out_dir", default="run_0")
    args = p.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    logging.info("loading dataset")
    print("INFO: Using device cpu")
    print("WARNING: torch.compile is not available")
    print("[INFO] starting")
    for epoch in range(2):
        for batch in range(2):
            print(f"Epoch: {epoch}, Batch: {batch}, Loss: {0.5 / (batch + 1):.3f}")
    print(f"p: {os.getcwd()}")
    print("condition=A seed=1 acc: 0.5 loss: 0.25")
    print("val_acc: 0.91, val_loss: 0.3")
    print("Tokens per second: 1234.5")
    print("UCB (Stochastic) cumulative_regret: 361.9")
    print("solved: 3/4")
    print("best_acc: 0.95 (best)")
    print("coverage: 12.5%")
    print("acc_ci: 0.5 \u00b1 0.1")
    print("PAIRED: ours vs baseline regime=low mean_diff=0.031 std_diff=0.012 t_stat=4.2 "
          "p_value=0.003 ci95=(0.02,0.04)")
    final = {"shakespeare_char": {"means": {"val_loss": 1.47}, "stds": {"val_loss": 0.01}}}
    with open(os.path.join(args.out_dir, "final_info.json"), "w") as f:
        json.dump(final, f)
'''


def test_ai_scientist_template_metrics(tmp_path):
    exp = write_exp(tmp_path, AI_SCIENTIST)
    r = run_exp(exp, tmp_path / "runs", args=("--out_dir", "run_0"))
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    v = m["values"]
    for not_metric in ("INFO", "WARNING", "Epoch", "Batch", "Loss", "p", "INFO:root"):
        assert not_metric not in v, v
    assert v["val_acc"] == 0.91 and v["val_loss"] == 0.3, v
    assert v["Tokens per second"] == 1234.5
    assert v["UCB (Stochastic) cumulative_regret"] == 361.9
    assert v["solved"] == 0.75 and v["best_acc"] == 0.95 and v["coverage"] == 12.5
    assert v["acc_ci"] == 0.5
    assert m["conditions"]["A"] == {} or "acc" not in m["conditions"]["A"]
    tagged = {(t["metric"], t["tags"]["seed"]): t["value"] for t in m["tagged"]}
    assert tagged == {("acc", "1"): 0.5, ("loss", "1"): 0.25}, m["tagged"]
    ann = {a["metric"]: a for a in m["annotated"]}
    assert ann["solved"]["ratio"] == "3/4"
    assert ann["best_acc"]["remark"] == "best"
    assert ann["coverage"]["percent"] is True
    assert ann["acc_ci"]["uncertainty"] == 0.1
    (paired,) = m["paired"]
    assert paired["method"] == "ours" and paired["baseline"] == "baseline"
    assert paired["regime"] == "low" and paired["p_value"] == 0.003
    assert paired["ci95_low"] == 0.02 and paired["ci95_high"] == 0.04
    assert "run_0/final_info.json" in m["files"]
    assert r.result["metric_issues"] == []


def test_run_reporting_nothing_is_invalid(tmp_path):
    exp = write_exp(tmp_path, """
        print("INFO: training")
        print("Epoch: 1, Batch: 5, Loss: 0.3")
        print("saved to /tmp/model.pt")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    kinds = [i["kind"] for i in r.result["metric_issues"]]
    assert kinds == ["no_metrics"], r.result["metric_issues"]


def test_the_seeds_default_str_results_are_reported_metrics(tmp_path):
    # The seed's harness writes results.json with json.dump(..., default=str): numpy float32
    # metrics become strings. The run reported them; labels alone still report nothing.
    exp = write_exp(tmp_path, """
        import json
        import numpy as np
        results = {"A": {"acc": np.float32(0.9312), "model": "mlp"}}
        with open("results.json", "w") as f:
            json.dump(results, f, indent=2, default=str)
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed" and r.result["metric_issues"] == []
    assert r.result["metrics"]["files"]["results.json"] == {"A": {"acc": "0.9312", "model": "mlp"}}
    labels = write_exp(tmp_path, """
        import json
        json.dump({"A": {"model": "mlp", "note": "1st try"}}, open("results.json", "w"))
    """, name="labels")
    r = run_exp(labels, tmp_path / "runs2")
    assert r.rc == 4 and [i["kind"] for i in r.result["metric_issues"]] == ["no_metrics"], r.why()


def test_metrics_none_allows_reporting_nothing(tmp_path):
    exp = write_exp(tmp_path, 'print("INFO: a data preparation step")\n', yaml="metrics: none\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    # A failed run stays failed, whatever it reported.
    exp2 = write_exp(tmp_path, "raise SystemExit(3)\n", name="exp2")
    r2 = run_exp(exp2, tmp_path / "runs2")
    assert r2.rc == 1, r2.why()


def test_results_csv_is_collected(tmp_path):
    exp = write_exp(tmp_path, """
        with open("results.csv", "w") as f:
            f.write("condition,seed,accuracy\\nA,1,0.5\\nB,1,0.75\\n")
    """, yaml="metrics: [accuracy]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    rows = r.result["metrics"]["files"]["results.csv"]
    assert rows == [{"condition": "A", "seed": 1.0, "accuracy": 0.5},
                    {"condition": "B", "seed": 1.0, "accuracy": 0.75}]


def test_results_csv_nan_is_an_issue(tmp_path):
    exp = write_exp(tmp_path, """
        open("results.csv", "w").write("acc,loss\\n0.5,nan\\n")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert [i["kind"] for i in r.result["metric_issues"]] == ["nan"]


# LB404 and the collector share one definition: for each print, whether the check counts it
# as a metric line, and the collector reads what it prints.
LB404_CASES = [
    ('print(f"accuracy: {acc:.3f}")', True),
    ('print(f"{name}: {value}")', True),
    ('print("accuracy:", acc)', True),
    ('print("accuracy: " + str(acc))', True),
    ('print("accuracy: %.3f" % acc)', True),
    ('print("accuracy: {:.3f}".format(acc))', True),
    ('print(f"condition=A seed={seed} acc: {acc} loss: {acc}")', True),
    ('print(f"solved: {seed}/{seed}")', True),
    ('sys.stdout.write(f"accuracy: {acc}\\n")', True),
    ('print(f"\\033[92maccuracy: {acc:.3f}\\033[0m")', True),  # coloured
    ('print(f"\\raccuracy: {acc}", end="")', True),  # a line a "\\r" update leaves
    ('print(f"INFO: accuracy is {acc}")', False),
    ('print(f"Epoch: {seed}, Batch: {seed}, Loss: {acc}")', False),
    ('print(f"saved to {name}")', False),
    ('print(acc)', False),
    ('print("p: /some/path")', False),
    ('print(f"accuracy: {acc}s")', False),  # a number with a unit: not collected, not passed
    ('print(f"Hits@10: {acc}")', True),  # ranking and fit metrics' names
    ('print(f"Top {seed} accuracy: {acc}")', True),  # a word that starts with a digit
    ('print(f"Step {seed} loss: {acc}")', False),  # a counter and its count: progress
]


@pytest.mark.parametrize("stmt,is_metric", LB404_CASES, ids=[c[0] for c in LB404_CASES])
def test_lb404_uses_the_collectors_parser(tmp_path, stmt, is_metric):
    exp = write_exp(tmp_path, f"""
        import sys
        acc, seed, name, value = 0.5, 1, "acc", 0.5
        {stmt}
    """)
    p = labbox("check", "--json", str(exp))
    doc = json.loads(p.stdout)
    ids = {f["id"] for f in doc["findings"]}
    assert ("LB404" not in ids) == is_metric, doc["llm_text"]
    # What the check says is what the run collects.
    r = run_exp(exp, tmp_path / "runs")
    kinds = [i["kind"] for i in r.result["metric_issues"]]
    assert (r.rc == 0) == is_metric and ("no_metrics" in kinds) != is_metric, r.why()


# The collector reads Python logging's INFO lines too: LB404 counts a logging.info when the
# code sets logging to print INFO in a format the collector reads, and only then.
LB404_LOGGING_CASES = [
    ('logging.basicConfig(level=logging.INFO)\nlogging.info("accuracy: %.3f", acc)', True),
    ('logging.info("accuracy: %.3f", acc)', False),  # the default level is WARNING
    ('logging.basicConfig(level=logging.WARNING)\nlogging.info("accuracy: %s", acc)', False),
    ('logging.basicConfig(level=logging.INFO)\nlogging.warning("accuracy: %s", acc)', False),
    ('logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s'
     ' - %(message)s")\nlogger = logging.getLogger(__name__)\nlogger.info(f"accuracy: {acc}")',
     True),
    ('logging.basicConfig(level="INFO", format="{asctime} | {levelname:<8} | {message}", '
     'style="{")\nlog = logging.getLogger("exp")\nlog.info("accuracy: %s", acc)', True),
    ('logging.basicConfig(level=logging.INFO, format="%(message)s")\n'
     'logging.info("accuracy: %s", acc)', False),  # stderr, no level: a library's text
    ('logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)\n'
     'logging.info("accuracy: %s", acc)', True),
    ('logger = logging.getLogger("exp")\nlogger.setLevel(logging.INFO)\n'
     'h = logging.StreamHandler(sys.stdout)\n'
     'h.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))\n'
     'logger.addHandler(h)\nlogger.info("accuracy: %s", acc)', True),
    ('logging.basicConfig(level=logging.INFO)\nlogging.log(logging.INFO, "accuracy: %s", acc)',
     True),
    ('logging.basicConfig(level=logging.INFO)\n'
     'logging.info("Epoch: %d, Loss: %f", seed, acc)', False),
    ('logging.basicConfig(level=logging.INFO, stream=sys.stdout, '
     'format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")\n'
     'log = logging.getLogger(__name__)\nlog.info("accuracy: %s", acc)', True),
    ('class T:\n    def __init__(self):\n        self.log = logging.getLogger("t")\n'
     '    def done(self, a):\n        self.log.info("accuracy: %.4f", a)\n'
     'logging.basicConfig(level=logging.DEBUG)\nT().done(acc)', True),
]


@pytest.mark.parametrize("stmt,is_metric", LB404_LOGGING_CASES,
                         ids=[c[0].splitlines()[-1] + f"-{i}"
                              for i, c in enumerate(LB404_LOGGING_CASES)])
def test_lb404_reads_logging_as_the_collector_does(tmp_path, stmt, is_metric):
    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "main.py").write_text("import logging, sys\nacc, seed = 0.5, 1\n" + stmt + "\n")
    p = labbox("check", "--json", str(exp))
    doc = json.loads(p.stdout)
    lb404 = [f for f in doc["findings"] if f["id"] == "LB404"]
    assert (not lb404) == is_metric, doc["llm_text"]
    if lb404 and "logging.info(" in stmt and "basicConfig" not in stmt and "setLevel" not in stmt:
        assert "basicConfig(level=logging.INFO)" in lb404[0]["message"], lb404
    r = run_exp(exp, tmp_path / "runs")
    kinds = [i["kind"] for i in r.result["metric_issues"]]
    assert (r.rc == 0) == is_metric and ("no_metrics" in kinds) != is_metric, r.why()
    if is_metric:
        assert r.result["metrics"]["values"] == {"accuracy": 0.5}, r.why()


# A progress bar's "\r" updates and a terminal colour around the result: the metrics are
# what the experiment printed, as the terminal showed it.
PROGRESS_AND_COLOUR = r'''
    import sys
    n = 400
    for i in range(n + 1):
        # tqdm(leave=False) on stderr, sharing the pipe: updates, then erased, no newline
        sys.stderr.write(f"\rtrain: {100*i//n:3d}%|{'#'*(i*20//n):<20}| {i}/{n} [00:00, 99.0it/s]")
    sys.stderr.write("\r" + " " * 70 + "\r")
    print("accuracy: 0.93")
    for step in range(3):
        print(f"\rrunning_loss: {0.5 / (step + 1):.4f}", end="", flush=True)
    print()
    GREEN, BOLD, RESET = "\033[92m", "\033[1m", "\033[0m"
    print(f"{BOLD}Final results{RESET}")
    print(f"{GREEN}f1: 0.88{RESET}")
    print(f"loss: {GREEN}0.21{RESET}\033[K")
    print(f"\033]8;;http://example.com\033\\auc\033]8;;\033\\: 0.97")
'''


def test_progress_bar_returns_and_colours_do_not_hide_metrics(tmp_path):
    exp = write_exp(tmp_path, PROGRESS_AND_COLOUR)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v == {"accuracy": 0.93, "running_loss": 0.1667, "f1": 0.88, "loss": 0.21,
                 "auc": 0.97}, v
    assert r.result["metric_issues"] == []


# print(f"loss: {loss}") of a 0-d torch tensor prints its repr, as does print() of numpy 2
# scalars inside a format that takes repr: the number is the experiment's result.
SCALAR_REPRS = '''
    print("loss: tensor(0.2500)")
    print("val_loss: tensor(0.3127, device='cuda:0', grad_fn=<NllLossBackward0>)")
    print("f1: np.float64(0.88), n_params: np.int64(1200)")
    print("per_class: tensor([0.5000, 0.2500])")
'''


def test_scalar_reprs_are_the_numbers_they_hold(tmp_path):
    exp = write_exp(tmp_path, SCALAR_REPRS)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["values"] == {"loss": 0.25, "val_loss": 0.3127, "f1": 0.88, "n_params": 1200}, m
    types = {a["metric"]: a["type"] for a in m["annotated"]}
    assert types == {"loss": "tensor", "val_loss": "tensor", "f1": "np.float64",
                     "n_params": "np.int64"}, m["annotated"]


# A declared metric that the experiment wrote without a value: pandas' NaN as JSON null and as
# an empty CSV cell, Python's None on stdout. Each is a metric not computed, not a result.
@pytest.mark.parametrize("main_py,kinds", [
    ('import json\njson.dump({"acc": None, "loss": 0.3}, open("results.json", "w"))\n',
     ["null", "missing"]),
    ('open("results.csv", "w").write("model,acc,loss\\nmlp,0.91,0.3\\ncnn,,0.2\\n")\n',
     ["null"]),
    ('print("acc: None")\nprint("loss: 0.3")\n', ["missing"]),
], ids=["json_null", "csv_empty_cell", "stdout_None"])
def test_a_declared_metric_without_a_value_is_not_reported(tmp_path, main_py, kinds):
    exp = write_exp(tmp_path, main_py, yaml="metrics: [acc, loss]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    issues = r.result["metric_issues"]
    assert [i["kind"] for i in issues] == kinds, issues
    assert all(i["metric"] == "acc" for i in issues), issues
    # Undeclared, a null is only what the experiment wrote.
    (exp / "labbox.yaml").unlink()
    r = run_exp(exp, tmp_path / "runs2")
    assert r.rc == 0 and r.result["metric_issues"] == [], r.why()


def test_tight_uncertainty_spaced_percent_and_underscore_groups_are_numbers(tmp_path):
    exp = write_exp(tmp_path, """
        m, sd = 0.9312, 0.0104
        print(f"acc: {m:.3f}\u00b1{sd:.3f}")
        print(f"coverage: {93.5:.1f} %")
        print(f"tokens: {32768:_}")
        print("sizes: 128,256,512")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["values"] == {"acc": 0.931, "coverage": 93.5, "tokens": 32768}, m
    ann = {a["metric"]: a for a in m["annotated"]}
    assert ann["acc"]["uncertainty"] == 0.01 and ann["coverage"]["percent"] is True, ann


def test_the_summary_says_when_results_are_partial(tmp_path):
    # A time guard that fired in a completed run: the summary a person reads lists the
    # conditions done and says they are partial, as result.json's partial does.
    exp = write_exp(tmp_path, """
        print("condition: A")
        print("acc: 0.5")
        print("TIME_GUARD: 0.1s \\u2014 saving partial results")
    """)
    p = labbox("run", "-q", "--python", "/usr/bin/python3", "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 0, p.stderr
    assert "completed" in p.stdout and "condition A: acc=0.5" in p.stdout, p.stdout
    assert "partial: the experiment's time guard fired (TIME_GUARD: 0.1s" in p.stdout, p.stdout
    crash = write_exp(tmp_path, 'print("acc: 0.5")\nraise SystemExit(3)\n', name="crash")
    p = labbox("run", "-q", "--python", "/usr/bin/python3", "--runs-dir", tmp_path / "runs", crash)
    assert p.returncode == 1, p.stderr
    assert "partial: the run did not finish" in p.stdout, p.stdout
    done = write_exp(tmp_path, 'print("acc: 0.5")\n', name="done")
    p = labbox("run", "-q", "--python", "/usr/bin/python3", "--runs-dir", tmp_path / "runs", done)
    assert p.returncode == 0 and "partial" not in p.stdout, p.stdout


def test_lines_printed_by_a_pools_workers_are_not_joined(tmp_path):
    # print() writes its text and its newline apart; with the run's unbuffered stdout, a
    # Pool's workers joined each other's lines in the one pipe and their metrics were lost.
    exp = write_exp(tmp_path, """
        from multiprocessing import Pool

        def work(k):
            for s in range(200):
                print(f"condition=c{k} seed={s} acc: 0.{k}{s % 10}")
            return k

        if __name__ == "__main__":
            with Pool(4) as p:
                p.map(work, range(8))
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    tagged = r.result["metrics"]["tagged"]
    assert len(tagged) == 1600, len(tagged)
    log = (r.run_dir / "run.log").read_text()
    assert all(line.count("condition=") == 1 for line in log.splitlines()), log[:2000]


# Forms real training code prints (tenth session): each alone made the run invalid_metrics.

def test_keras_progress_lines_are_metrics_the_last_epoch_wins(tmp_path):
    # Keras 2's verbose=1 output as model.fit writes it (the bar's updates end in "\r"), then
    # Keras 3's bar with its colours, then the one-line "Epoch K/M - ..." form.
    exp = write_exp(tmp_path, r'''
        import sys
        w = sys.stdout.write
        for e, (loss, acc) in enumerate([(0.5, 0.7), (0.1234, 0.91)], 1):
            w(f"Epoch {e}/2\n")
            w(" 5/32 [====>.........................] - ETA: 3s - loss: 0.9000 - accuracy: 0.5000\r")
            w(f"32/32 [==============================] - 1s 20ms/step - loss: {loss:.4f} - "
              f"accuracy: {acc:.4f} - val_loss: 0.2000 - val_accuracy: 0.8800\n")
        w("\x1b[1m32/32\x1b[0m \x1b[32m\u2501\u2501\u2501\u2501\x1b[0m \x1b[1m1s\x1b[0m 20ms/step"
          " - top_k: 0.9900 - auc: 0.9500\n")
        w("Epoch 3/3 - loss: 0.1234 - val_acc: 0.8800\n")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed" and r.result["metric_issues"] == []
    v = r.result["metrics"]["values"]
    assert v == {"loss": 0.1234, "accuracy": 0.91, "val_loss": 0.2, "val_accuracy": 0.88,
                 "top_k": 0.99, "auc": 0.95, "val_acc": 0.88}, v
    seen = {x["metric"]: x["seen"] for x in r.result["metrics"]["repeats"]}
    assert seen["loss"] == 3 and seen["accuracy"] == 2, seen


def test_an_unfinished_keras_epoch_is_not_a_result(tmp_path):
    # A bar before its end holds running averages; "1s 20ms/step" and "ETA: 3s" are no metrics.
    exp = write_exp(tmp_path, r'''
        print(" 5/32 [====>.........................] - ETA: 3s - loss: 0.9000 - accuracy: 0.5000")
        print("Epoch 1/3")
        print("32/32 [==============================] - 1s 20ms/step")
        print("acc: 0.9 - 0.1")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert [i["kind"] for i in r.result["metric_issues"]] == ["no_metrics"]


def test_a_markdown_metric_table_is_read(tmp_path):
    exp = write_exp(tmp_path, 'print("| bleu | 27.3 |")\n')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"bleu": 27.3}
    exp2 = write_exp(tmp_path, '''
        print("| Metric | Value |")
        print("|--------|------:|")
        print("| bleu   | 27.3  |")
        print("| chrF   | 55.1  |")
    ''', name="exp2")
    r = run_exp(exp2, tmp_path / "runs2")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"bleu": 27.3, "chrF": 55.1}


def test_a_comparison_table_is_not_read_as_metrics(tmp_path):
    # Under "| method | acc |" a row's first cell is a method, not a metric's name: reading
    # "ours: 0.91" would report a metric nobody printed. Wider tables are not read either.
    exp = write_exp(tmp_path, '''
        print("| method | acc |")
        print("|---|---|")
        print("| ours | 0.91 |")
        print()
        print("| method | acc | f1 |")
        print("|---|---|---|")
        print("| ours | 0.91 | 0.88 |")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert r.result["metrics"]["values"] == {}


def test_a_second_table_after_a_blank_line_is_read_by_its_own_header(tmp_path):
    # A results table, then a comparison table (the published baseline's numbers): in
    # Markdown a blank line ends a table, and a header row with its separator starts one.
    # The second table's rows are not the experiment's result.
    exp = write_exp(tmp_path, """
        print("| metric | value |")
        print("|---|---|")
        print("| accuracy | 0.91 |")
        print()
        print("| metric | baseline |")
        print("|---|---|")
        print("| accuracy | 0.95 |")
        print()
        print("| Model | Acc |")
        print("|---|---|")
        print("| baseline | 0.5 |")
        print("| metric | value |")
        print("|---|---|")
        print("| f1 | 0.8 |")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["values"] == {"accuracy": 0.91, "f1": 0.8}, r.why()
    assert "repeats" not in m, m


def test_python_logging_info_lines_are_metrics(tmp_path):
    # logging writes to stderr; labbox reads the run's output as one stream.
    exp = write_exp(tmp_path, '''
        import logging
        logging.basicConfig(level=logging.INFO)
        logging.info("accuracy: 0.91")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"accuracy": 0.91}
    exp2 = write_exp(tmp_path, '''
        import logging, sys
        logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                            format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
        logging.getLogger("train").info("f1: 0.88")
        logging.getLogger("train").info("loaded 3 files")
    ''', name="exp2")
    r = run_exp(exp2, tmp_path / "runs2")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"f1": 0.88}


LOG_FORMATS = [
    "%(asctime)s [%(levelname)s] %(message)s",
    "[%(levelname)s] %(message)s",
    "%(asctime)s %(levelname)s %(name)s: %(message)s",
    "%(asctime)s | %(levelname)-8s | %(name)s:%(funcName)s:%(lineno)d - %(message)s",
    "[%(asctime)s] [%(levelname)s] [%(name)s] %(message)s",
    # Hydra's job logging: bracketed fields with no blank between them
    "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s",
    "[%(asctime)s][%(levelname)s] - %(message)s",
]


@pytest.mark.parametrize("fmt", LOG_FORMATS)
def test_metrics_logged_with_a_common_format_are_read(tmp_path, fmt):
    # logging.info under the formats research code configures: the run's results, on stderr.
    exp = write_exp(tmp_path, f'''
        import logging
        logging.basicConfig(level=logging.INFO, format={fmt!r})
        log = logging.getLogger("exp")
        log.info("loading 3 files")
        log.warning("val_loss: 9.9")
        def main():
            log.info("accuracy: 0.91")
            log.info("val_loss: 0.25")
        main()
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"accuracy": 0.91, "val_loss": 0.25}


def test_absl_logging_info_lines_are_read(tmp_path):
    # JAX, TensorFlow and flax code logs through absl.logging: Python logging with absl's
    # glog-style prefix (level letter, month and day, clock, thread id, file:line]), on stderr.
    # Its INFO lines are read as logging's are; a warning's are not.
    exp = write_exp(tmp_path, """
        import logging
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter(
            "%(levelname).1s%(asctime)s.%(msecs)03d000 %(thread)5d %(filename)s:%(lineno)d] %(message)s",
            datefmt="%m%d %H:%M:%S"))
        log = logging.getLogger("absl")
        log.addHandler(h)
        log.setLevel(logging.INFO)
        for step in (100, 200):
            log.info(f"step {step}: loss = {1 / step:.4f}")
        log.warning("eval_loss: 9.9")
        log.info("eval_accuracy: 0.913")
        log.info("eval_loss: 0.281")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"eval_accuracy": 0.913, "eval_loss": 0.281}, r.why()


# Hydra's default job logging (hydra/conf/hydra/job_logging/default.yaml), which every
# @hydra.main script that logs with log.info gets: the root logger at INFO, a console
# handler to stdout with the format below (built here by hand: labbox's check refuses
# dictConfig, which imports what its "ext://" names).
HYDRA_JOB_LOGGING = """
    import logging, sys
    console = logging.StreamHandler(sys.stdout)
    console.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logging.getLogger().addHandler(console)
    logging.getLogger().setLevel(logging.INFO)
    log = logging.getLogger("__main__")
"""


def test_hydras_job_logging_is_read(tmp_path):
    exp = write_exp(tmp_path, HYDRA_JOB_LOGGING + """
    log.info("Instantiating model <src.models.Classifier>")
    log.info("Epoch 3: loss: 0.5")
    log.warning("val_loss: 9.9")
    log.info("test_accuracy: 0.8511")
    log.info("test_loss: 0.4122")
""")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"test_accuracy": 0.8511, "test_loss": 0.4122}
    assert r.result["metric_issues"] == []


def test_hydras_job_logging_at_another_level_is_told_the_level(tmp_path):
    exp = write_exp(tmp_path, HYDRA_JOB_LOGGING + """
    log.warning("test_accuracy: 0.8511")
""")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    assert "level is not INFO" in issue["message"], issue


def test_the_advice_for_unread_info_lines_is_not_to_use_logging_info(tmp_path):
    # The code already logs at INFO: the advice is the format (or print), never logging.info.
    exp = write_exp(tmp_path, '''
        import logging
        logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
        logging.info("accuracy: 0.91")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    assert "1 log line like `INFO: accuracy: 0.91`" in issue["message"], issue
    assert "logging.info" not in issue["message"], issue
    assert "%(asctime)s [%(levelname)s] %(message)s" in issue["message"], issue


def test_metrics_in_unread_log_lines_are_named_in_the_issue(tmp_path):
    exp = write_exp(tmp_path, '''
        import logging
        logging.warning("accuracy: 0.91")
        print("INFO: loss: 0.3")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    assert "2 log lines like `WARNING:root:accuracy: 0.91`" in issue["message"], issue
    assert r.result["metrics"]["values"] == {}


def test_a_worker_threads_traceback_is_not_a_metric(tmp_path):
    # A bug in a thread prints "KeyError: 0"; the main process goes on, prints no result and
    # exits 0. That is a run that reported nothing, not a metric KeyError = 0.
    exp = write_exp(tmp_path, '''
        import threading
        results = {}
        def evaluate(split):
            scores = {"train": 0.9, "test": 0.8}
            results[split] = scores[split]
        t = threading.Thread(target=evaluate, args=(0,))
        t.start(); t.join()
        print("done, evaluated", len(results), "splits")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert r.result["metrics"]["values"] == {}
    assert [i["kind"] for i in r.result["metric_issues"]] == ["no_metrics"]
    assert "KeyError: 0" in r.log()


def test_exception_lines_printed_to_stdout_are_not_metrics(tmp_path):
    # The same end of a traceback on stdout (traceback.print_exc(file=sys.stdout), or the
    # experiment printing the exception it caught): beside real metrics, never one of them.
    exp = write_exp(tmp_path, '''
        import sys, traceback
        print("accuracy: 0.5")
        try:
            {}[3]
        except KeyError:
            traceback.print_exc(file=sys.stdout)
        try:
            [][7]
        except IndexError as e:
            print(f"{type(e).__name__}: 7")
        print("error: 0.12")
        print("test_error: 0.3")
        print("Error rate: 0.1")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {
        "accuracy": 0.5, "error": 0.12, "test_error": 0.3, "Error rate": 0.1}


def test_a_crashed_runs_partial_metrics_hold_no_exception(tmp_path):
    exp = write_exp(tmp_path, '''
        scores = {0: 0.1, 1: 0.2}
        for epoch in range(2):
            print(f"loss: {scores[epoch]}")
        print(scores[7])
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    assert r.result["status"] == "failed"
    assert r.result["metrics"]["values"] == {"loss": 0.2}


def test_a_librarys_lines_on_stderr_are_not_metrics(tmp_path):
    # What pytorch_lightning's Trainer prints at start-up, to stderr. Metrics are stdout's;
    # the experiment's own logging.info (stderr too) is still read.
    exp = write_exp(tmp_path, '''
        import logging, sys
        sys.stderr.write("GPU available: False, used: False\\n")
        sys.stderr.write("TPU available: False, using: 0 TPU cores\\n")
        sys.stderr.write("Non-trainable params: 0\\n")
        logging.basicConfig(level=logging.INFO)
        logging.info("f1: 0.7")
        print("val_acc: 0.81")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"val_acc": 0.81, "f1": 0.7}
    log = r.log()
    assert "GPU available: False, used: False" in log and "val_acc: 0.81" in log


def test_metrics_printed_only_to_stderr_are_named_in_the_issue(tmp_path):
    exp = write_exp(tmp_path, '''
        import sys
        print("accuracy: 0.91", file=sys.stderr)
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    assert "1 line on stderr like `accuracy: 0.91`" in issue["message"], issue
    assert r.result["metrics"]["values"] == {}


def test_per_epoch_lines_alone_report_the_last_epoch(tmp_path):
    # A script that prints only per-epoch lines, in the forms tutorials use: the last epoch's
    # line is the result, as Keras's is, and result.json says where the values came from.
    exp = write_exp(tmp_path, """
        for epoch in range(1, 4):
            print(f"Epoch [{epoch}/3], Loss: {0.5 / epoch:.4f}")
            print(f"epoch: {epoch}, train_loss: {2.8 / epoch:.2f}, val_acc: {0.7 + epoch / 100:.2f}")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed" and r.result["partial"] is False
    m = r.result["metrics"]
    assert m["values"] == {"train_loss": 0.93, "val_acc": 0.73}, m
    assert m["source"] == "progress" and m["progress_lines"] == 6, m
    assert r.result["metric_issues"] == []
    (w,) = [w for w in r.result["metric_warnings"] if w["kind"] == "from_progress"]
    assert "`epoch: 3, train_loss: 0.93, val_acc: 0.73`" in w["message"], w
    p = labbox("run", "-q", "--python", "/usr/bin/python3", "--runs-dir", tmp_path / "runs", exp)
    assert "from progress: no final metrics were printed" in p.stdout, p.stdout


@pytest.mark.parametrize("line", [
    "Epoch {e} | train_loss: 0.3 | val_acc: 0.7",
    "epoch {e} train_loss: 0.5",
    "Epoch: {e}, Train Loss: 0.321, Val Acc: 0.88",
    "[epoch {e}] val_loss: 0.25",
])
def test_epoch_line_forms_are_read_as_progress(tmp_path, line):
    exp = write_exp(tmp_path, f"""
        for e in range(2):
            print(f"{line}")
        print("final_acc: 0.9")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    # A final line is the result: the progress lines add nothing to it.
    assert r.result["metrics"]["values"] == {"final_acc": 0.9}, r.result["metrics"]
    assert "source" not in r.result["metrics"]


def test_per_step_lines_alone_are_no_result_and_the_issue_says_why(tmp_path):
    exp = write_exp(tmp_path, """
        for step in range(3):
            print(f"step {step * 100}, loss: {1.0 / (step + 1):.3f}")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    assert r.result["status"] == "invalid_metrics"
    assert r.result["metrics"]["values"] == {}
    (i,) = r.result["metric_issues"]
    assert i["kind"] == "no_metrics"
    assert "3 progress lines like `step 0, loss: 1.000` were read as progress" in i["message"]
    assert "print the final metrics once at the end" in i["message"]
    assert "(`loss: 0.333`)" in i["message"], i


def test_start_up_facts_do_not_silently_hide_a_completed_runs_step_evaluations(tmp_path):
    # makemore's shape: dataset statistics as `name: value` at start-up, then the only
    # evaluation on step lines. The statistics stand, and the run says what was not read.
    exp = write_exp(tmp_path, """
        print("number of examples in the dataset: 3000")
        print("max word length: 10")
        for s in range(0, 1001, 10):
            print(f"step {s} | loss {3.0 - s / 1000:.4f} | step time 25.00ms")
            if s and s % 500 == 0:
                print(f"step {s} train loss: {2.0 - s / 10000:.4f} test loss: {2.1 - s / 10000:.4f}")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    assert r.result["metrics"]["values"] == {"number of examples in the dataset": 3000,
                                             "max word length": 10}
    (w,) = [w for w in r.result["metric_warnings"] if w["kind"] == "progress_ignored"]
    assert "2 progress lines like `step 500 train loss: 1.9500 test loss: 2.0500`" in w["message"], w
    assert "`max word length`" in w["message"] and "(`test loss: 2.0000`)" in w["message"], w


def test_start_up_facts_do_not_stop_the_last_epoch_being_the_result(tmp_path):
    exp = write_exp(tmp_path, """
        import sys
        print("n_params: 1200")
        for epoch in range(3):
            print(f"epoch {epoch} train_loss: {1.0 / (epoch + 1):.4f} val_acc: {0.5 + epoch / 10:.2f}")
        if "--final" in sys.argv:
            print("val_acc: 0.9")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["values"] == {"n_params": 1200, "train_loss": 0.3333, "val_acc": 0.7}, m
    assert m["source"] == "progress" and m["progress_lines"] == 3, m
    (w,) = [w for w in r.result["metric_warnings"] if w["kind"] == "from_progress"]
    assert "beside those printed before its first progress line" in w["message"], w
    # A metric line after the progress lines is the result: nothing is taken from them.
    r = run_exp(exp, tmp_path / "runs2", args=("--final",))
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"n_params": 1200, "val_acc": 0.9}
    assert "source" not in r.result["metrics"]
    assert not r.result["metric_warnings"], r.result["metric_warnings"]


def test_a_timed_out_run_keeps_its_last_progress_values(tmp_path):
    exp = write_exp(tmp_path, """
        import time
        for epoch in range(1000):
            print(f"epoch {epoch} train_loss: {1.0 / (epoch + 1):.4f}", flush=True)
            time.sleep(0.2)
        print("train_loss: 0.0")
    """)
    r = run_exp(exp, tmp_path / "runs", "--budget", "3")
    assert r.result["status"] == "timeout", r.why()
    assert r.result["partial"] is True
    m = r.result["metrics"]
    assert m["source"] == "progress" and m["progress_lines"] >= 2, m
    assert set(m["values"]) == {"train_loss"} and 0 < m["values"]["train_loss"] < 1, m


def test_a_crashed_runs_step_lines_are_its_partial_values(tmp_path):
    exp = write_exp(tmp_path, """
        for batch in range(3):
            print(f"Epoch: 1, Batch: {batch}, Loss: {0.5 / (batch + 1):.4f}")
        raise SystemExit(3)
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    assert r.result["status"] == "failed" and r.result["partial"] is True
    assert r.result["metrics"]["values"] == {"Loss": 0.1667}
    assert r.result["metrics"]["source"] == "progress"


def test_a_results_file_without_values_keeps_progress_lines_out(tmp_path):
    """A run that wrote its own account of a failure into results.json ({"error": ...}) has
    said what its result is: its progress lines are not taken for one (it was completed
    with the training values, and the file's error was only a warning's)."""
    exp = write_exp(tmp_path, """
        import json
        for e in range(1, 4):
            print(f"Epoch {e} | train_loss: {1.0 / e:.3f} | val_acc: {0.5 + 0.1 * e:.2f}")
        json.dump({"error": "evaluation on the test set failed"}, open("results.json", "w"))
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.result["status"] == "invalid_metrics", r.why()
    assert r.result["metrics"].get("source") != "progress", r.why()
    assert "train_loss" not in r.result["metrics"]["values"], r.why()


def test_a_heading_before_the_pairs_is_no_metric(tmp_path):
    # PyTorch's MNIST example prints its test result under a heading.
    exp = write_exp(tmp_path, """
        print("Test set: Average loss: 0.0341, Accuracy: 9890/10000 (99%)")
        print("model: resnet lr: 0.1")
        print("optimizer: adam wd: 0.01, test_acc: 0.91")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    # a setting and its value before more pairs is no heading (a one-word name, a label in
    # lower case): each stays a pair of its own
    assert v == {"Average loss": 0.0341, "Accuracy": 0.989, "model": "resnet", "lr": 0.1,
                 "optimizer": "adam", "wd": 0.01, "test_acc": 0.91}, v
    (a,) = r.result["metrics"]["annotated"]
    assert a["ratio"] == "9890/10000" and a["remark"] == "99%", a


def test_a_heading_or_tag_naming_another_split_qualifies_its_names(tmp_path):
    # The test split's line keeps its names (the result); a train or validation line under
    # its own heading or tag is qualified by it, so it never replaces the test numbers.
    exp = write_exp(tmp_path, """
        print("Test set: Average loss: 0.0341, Accuracy: 9890/10000 (99%)")
        print("Train set: Average loss: 0.0100, Accuracy: 59800/60000 (100%)")
        print("[test] loss: 0.40, acc: 0.75")
        print("[train] loss: 0.01, acc: 0.99")
        print("[val] loss: 0.2, acc: 0.8")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v == {"Average loss": 0.0341, "Accuracy": 0.989,
                 "Train set Average loss": 0.01, "Train set Accuracy": 59800 / 60000,
                 "loss": 0.4, "acc": 0.75, "train loss": 0.01, "train acc": 0.99,
                 "val loss": 0.2, "val acc": 0.8}, v
    assert "repeats" not in r.result["metrics"], r.why()


def test_results_under_tags_or_dataset_labels_that_change_are_kept_apart(tmp_path):
    # One metric per dataset in a loop: the bracketed word or the dataset label is what tells
    # the values apart, so each keeps its own (the test split's under the plain name); a name
    # under one tag only, or the same tag each time, is read as before.
    exp = write_exp(tmp_path, """
        print("[RESULT] epochs: 3")
        results = {"cifar10": 0.91, "cifar100": 0.67, "svhn": 0.95}
        for ds, acc in results.items():
            print(f"[{ds}] acc: {acc}")
        for ds, acc in results.items():
            print(f"dataset={ds} top1: {acc}")
        for ds, loss in [("mnist", 0.021), ("svhn", 0.25)]:
            print(f"dataset: {ds}")
            print(f"test_loss: {loss}")
            print()
        print("[test] f1: 0.8")
        print("[ood] f1: 0.6")
        print("[proposed] time_s: 10.5")
        print("[proposed] time_s: 10.7")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v == {"epochs": 3, "cifar10 acc": 0.91, "cifar100 acc": 0.67, "svhn acc": 0.95,
                 "cifar10 top1": 0.91, "cifar100 top1": 0.67, "svhn top1": 0.95,
                 "dataset": "svhn", "mnist test_loss": 0.021, "svhn test_loss": 0.25,
                 "f1": 0.8, "ood f1": 0.6, "time_s": 10.7}, v


def test_a_split_head_before_the_pairs_says_whose_they_are(tmp_path):
    # A final line headed by its split, joined to the pairs by '|' or ':', is a result line:
    # the test split's keeps its names (after step lines it is what the run reported), any
    # other split's names are qualified by the head as printed.
    exp = write_exp(tmp_path, """
        for step in (100, 200, 300):
            print(f"step {step} | loss: {1/step:.4f} | acc: {1-1/step:.4f}")
        print("test | loss: 0.30 | acc: 0.90")
        print("Test set: Accuracy: 0.9")
        print("test: f1: 0.85")
        print("eval | auc: 0.93")
        print("Train set: Accuracy: 0.99")
        print("val: f1: 0.8")
        print("train: 50000")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed", r.why()
    v = r.result["metrics"]["values"]
    assert v == {"loss": 0.3, "acc": 0.9, "Accuracy": 0.9, "f1": 0.85, "eval auc": 0.93,
                 "Train set Accuracy": 0.99, "val f1": 0.8, "train": 50000}, v


def test_intervals_a_trailing_percent_and_a_headed_dict_are_read(tmp_path):
    # Bootstrap intervals in brackets, a unit after the uncertainty and print("Results:", d)
    # are results: the point value is read, the interval kept as the remark.
    exp = write_exp(tmp_path, """
        print("n_test: 500")
        print("acc: 0.81 [0.78, 0.84]")
        print("f1: 81.2 ± 1.3 %")
        print("Results:", {"test_acc": 0.88, "test_f1": 0.81})
        print("recall: 0.75 95% CI [0.70, 0.80]")
        print("val:", {"loss": 0.3})
        print("best: 0.9 [cifar10]")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v == {"n_test": 500, "acc": 0.81, "f1": 81.2, "test_acc": 0.88, "test_f1": 0.81,
                 "recall": 0.75, "val loss": 0.3}, v
    ann = {a["metric"]: a for a in r.result["metrics"]["annotated"]}
    assert ann["acc"]["remark"] == "[0.78, 0.84]", ann
    assert ann["recall"]["remark"] == "95% CI [0.70, 0.80]", ann
    assert ann["f1"]["uncertainty"] == 1.3 and ann["f1"]["percent"], ann


def test_a_two_column_summary_yields_no_name_across_its_columns(tmp_path):
    # statsmodels' OLS summary prints two columns of pairs; a label of two words
    # ("Least Squares") must not glue its second word to the next column's name.
    exp = write_exp(tmp_path, """
        print("Dep. Variable:                      y   R-squared:                       0.912")
        print("Method:                 Least Squares   F-statistic:                     500.1")
        print("Date:                Mon, 07 Dec 2026   Prob (F-statistic):           1.23e-30")
        print("Kurtosis:                       2.850   Cond. No.                         1.05")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v == {"Dep. Variable": "y", "R-squared": 0.912}, v


def test_a_line_after_the_condition_blocks_is_the_runs_not_the_last_conditions(tmp_path):
    # Per-condition blocks, then the mean over them set apart by a blank line: the mean is
    # the run's value, and the last condition keeps its own.
    exp = write_exp(tmp_path, """
        acc = {"baseline": 0.70, "proposed": 0.90}
        for c in acc:
            print(f"condition: {c}")
            print(f"lr: 0.1")
            print()
            print(f"accuracy: {acc[c]}")
        print()
        print(f"mean_accuracy: {sum(acc.values()) / 2}")
        print(f"accuracy: {sum(acc.values()) / 2}")
    """)
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["conditions"] == {"baseline": {"lr": 0.1, "accuracy": 0.7},
                               "proposed": {"lr": 0.1, "accuracy": 0.9}}, r.why()
    assert m["values"] == {"mean_accuracy": 0.8, "accuracy": 0.8}, r.why()
    assert "repeats" not in m, m


def test_a_value_printed_on_stdout_is_not_replaced_by_one_logged_on_stderr(tmp_path):
    # Per-epoch validation accuracy logged (stderr), the final test accuracy printed (stdout).
    # The two are separate pipes, read in no reliable order: the printed value is the result
    # whichever arrives last, here even a logged one written well after it.
    exp = write_exp(tmp_path, '''
        import logging, sys, time
        logging.basicConfig(level=logging.INFO)
        log = logging.getLogger("train")
        for ep in range(3):
            log.info("accuracy: %.2f", 0.5 + ep * 0.01)
        print("accuracy: 0.9", flush=True)
        if len(sys.argv) > 1:
            time.sleep(0.3)
            log.info("accuracy: 0.52")   # a callback that logs the best epoch at teardown
            log.info("loss: 0.25")
    ''')
    r = run_exp(exp, tmp_path / "runs", args=["late"])
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"accuracy": 0.9, "loss": 0.25}, r.why()
    # Without the late lines, whatever order the pipes are read in, the same value.
    for i in range(5):
        r = run_exp(exp, tmp_path / f"runs{i}")
        assert r.rc == 0, r.why()
        assert r.result["metrics"]["values"] == {"accuracy": 0.9}, r.why()


def test_a_condition_groups_the_lines_of_its_own_stream_only(tmp_path):
    # stdout's `condition:` lines group stdout's values; a logged `condition:` groups the
    # logged ones. A value logged without a logged condition is no condition's: which stdout
    # condition was current when it was written, two pipes do not tell.
    exp = write_exp(tmp_path, '''
        import logging, time
        logging.basicConfig(level=logging.INFO)
        log = logging.getLogger("exp")
        print("condition: baseline", flush=True)
        print("accuracy: 0.6", flush=True)
        time.sleep(0.2)
        log.info("condition: ours")
        log.info("accuracy: 0.8")
        time.sleep(0.2)
        print("condition: ablation", flush=True)
        print("accuracy: 0.7", flush=True)
        time.sleep(0.2)
        log.info("condition: ours")
        time.sleep(0.2)
        print("seed: 3", flush=True)
        time.sleep(0.2)
        log.info("f1: 0.75")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    m = r.result["metrics"]
    assert m["conditions"] == {"baseline": {"accuracy": 0.6},
                               "ours": {"accuracy": 0.8, "f1": 0.75},
                               "ablation": {"accuracy": 0.7, "seed": 3}}, r.why()
    assert m["values"] == {}, r.why()


def test_integers_are_recorded_as_the_integers_printed(tmp_path):
    exp = write_exp(tmp_path, '''
        import json
        print("weights_checksum: 1152921504606847013")
        print("tokens: 18446744073709551615")
        print("offset: -9223372036854775808")
        print("ids_hash: 100000000000000000999")
        print("epochs: 10")
        print("acc: 0.5")
        json.dump({"sum": 2**60 + 7, "big": 123456789012345678901234567890, "f": 2.5},
                  open("results.json", "w"))
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.file_json("result.json")["metrics"]["values"]
    # Python compares an int with a float exactly: 1.152921504606847e18 would not equal these.
    assert v["weights_checksum"] == 1152921504606847013 and type(v["weights_checksum"]) is int
    assert v["tokens"] == 2**64 - 1 and v["offset"] == -2**63
    assert v["epochs"] == 10 and type(v["epochs"]) is int
    assert v["acc"] == 0.5 and type(v["acc"]) is float
    # Past 64 bits, the digits exactly (most JSON readers would round a number that long).
    assert v["ids_hash"] == "100000000000000000999"
    f = r.file_json("result.json")["metrics"]["files"]["results.json"]
    assert f["sum"] == 2**60 + 7 and f["f"] == 2.5
    assert f["big"] == "123456789012345678901234567890"


# An agent-style experiment whose --output_dir is an absolute path under /tmp (HF-style
# `--output_dir /tmp/test-run`): its results.json goes with the sandbox's private /tmp.
OUT_DIR_IN_TMP = '''
    import argparse, json, os
    p = argparse.ArgumentParser()
    p.add_argument("--output_dir", default="/tmp/exp_out")
    a = p.parse_args()
    os.makedirs(a.output_dir, exist_ok=True)
    json.dump({"accuracy": 0.9}, open(os.path.join(a.output_dir, "results.json"), "w"))
    print("saved to", a.output_dir)
'''


@pytest.mark.parametrize("args,where", [((), "/tmp/exp_out"),
                                        (("--output_dir", "/tmp/run1"), "/tmp/run1")])
def test_results_written_into_an_absolute_out_dir_are_named_not_blamed(tmp_path, args, where):
    exp = write_exp(tmp_path, OUT_DIR_IN_TMP)
    r = run_exp(exp, tmp_path / "runs", args=args)
    assert r.rc == 4 and r.result["status"] == "invalid_metrics", r.why()
    [issue] = r.result["metric_issues"]
    msg = issue["message"]
    assert issue["kind"] == "no_metrics", msg
    # names the directory, says why it is lost, and gives both remedies
    assert f"`{where}`" in msg and "outside the experiment directory" in msg, msg
    assert "discarded with the sandbox" in msg, msg
    assert "relative output directory" in msg and f"-v HOSTDIR:{where}:rw" in msg, msg
    assert "print the metrics" not in msg, msg
    # the remedy works: a relative --output_dir is read
    r = run_exp(exp, tmp_path / "runs", args=("--output_dir", "run_0"))
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["files"]["run_0/results.json"] == {"accuracy": 0.9}, r.why()


def test_a_run_that_printed_only_labels_is_told_so(tmp_path):
    # pytorch/examples word_language_model's shape: a start-up label, then results in a table
    # labbox does not read. The label says what ran, not what came of it: the run completed
    # and says so, with a warning that names the label and the unread results (a label may
    # be a result, `converged: True`, so it is not a failure).
    exp = write_exp(tmp_path, '''
        print("Using device:", "cpu")
        print("| End of training | test loss  5.46 | test ppl   235.08")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metric_issues"] == []
    (warning,) = [w for w in r.result["metric_warnings"] if w["kind"] == "labels_only"]
    assert "only labels, no number (`Using device: cpu`)" in warning["message"], warning
    assert r.result["metrics"]["values"] == {"Using device": "cpu"}


def test_decorated_result_lines_and_dict_lines_are_read(tmp_path):
    exp = write_exp(tmp_path, '''
        import json
        print("Using device: cpu")
        print("====> Test set loss: 158.0000")
        print("==> val_acc: 0.91")
        print("[RESULT] auc: 0.77")
        print("  - f1: 0.80")
        print({'eval_loss': 0.5, 'epoch': 1.0})
        print({'eval_loss': 0.35, 'eval_accuracy': 0.88, 'epoch': 3.0})
        print(json.dumps({"test_acc": 0.905, "test_loss": 0.27}))
        print("[WARNING] recall: 0.1")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "Using device": "cpu", "Test set loss": 158.0, "val_acc": 0.91, "auc": 0.77,
        "f1": 0.8, "eval_loss": 0.35, "eval_accuracy": 0.88, "test_acc": 0.905,
        "test_loss": 0.27}


def test_per_step_json_lines_and_key_value_lines_are_named_in_the_issue(tmp_path):
    exp = write_exp(tmp_path, '''
        import json
        for step in range(3):
            print(json.dumps({"step": step, "loss": 1.0 / (step + 1)}))
        print("test_acc=0.905 test_loss=0.27")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    assert '4 lines on stdout like `{"step": 0, "loss": 1.0}`' in issue["message"], issue
    assert "no 'name: value' line" not in issue["message"]


def test_ranking_metrics_and_names_with_numbers_or_a_comma_are_read(tmp_path):
    # Knowledge-graph, recommender, retrieval and detection code reports `Hits@10`,
    # `Recall@20`, `NDCG@10`, `mAP@0.5`; regression `R^2`; classification `Top 5 accuracy`;
    # the Coursera ML ex1 `Predicted price of a 1650 sq-ft, 3 br house`. A count or a
    # timestamp stays no name.
    exp = write_exp(tmp_path, '''
        print("Hits@1: 0.301")
        print("Hits@10: 0.512")
        print("Recall@20: 0.618")
        print("NDCG@10: 0.401")
        print("mAP@0.5: 0.70")
        print("R^2: 0.91")
        print("Top 5 accuracy: 0.93")
        print("Accuracy after 10 epochs: 0.91")
        print("Predicted price of a 1650 sq-ft, 3 br house: 293081.46433492796")
        for i in range(3):
            print(f"Sample {i}: {i / 10}")
        print("12:00:01 loss: 0.3")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {
        "Hits@1": 0.301, "Hits@10": 0.512, "Recall@20": 0.618, "NDCG@10": 0.401,
        "mAP@0.5": 0.7, "R^2": 0.91, "Top 5 accuracy": 0.93, "Accuracy after 10 epochs": 0.91,
        "Predicted price of a 1650 sq-ft, 3 br house": 293081.46433492796}, r.why()
    # A declared name with an @ is found where it was printed.
    (exp / "labbox.yaml").write_text("metrics: [Hits@10, NDCG@10]\n")
    r = run_exp(exp, tmp_path / "runs2")
    assert r.rc == 0 and r.result["metric_issues"] == [], r.why()


def test_ranking_metrics_alone_are_the_runs_result(tmp_path):
    # When they are the only metrics, the run reported them: not no_metrics.
    exp = write_exp(tmp_path, '''
        print("Hits@10: 0.512")
        print("NDCG@10: 0.401")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    assert r.result["metrics"]["values"] == {"Hits@10": 0.512, "NDCG@10": 0.401}


def test_results_named_with_a_count_are_quoted_not_called_absent(tmp_path):
    """`Test accuracy (seed 3): 0.66` is a 'name: value' line whose name ends in a count (a
    loop's enumeration, which labbox does not take as a metric's name). A run that printed
    only such lines was told "no 'name: value' line on stdout": untrue. no_metrics now
    quotes the line and the name to print it under."""
    exp = write_exp(tmp_path, '''
        for seed in range(3):
            print(f"Test accuracy (seed {seed}): {0.6 + seed / 100}")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4 and r.result["metrics"]["values"] == {}, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics", issue
    assert "no 'name: value' line" not in issue["message"], issue
    assert "3 lines on stdout like `Test accuracy (seed 0): 0.6`" in issue["message"], issue
    assert "(`Test accuracy: 0.6`)" in issue["message"] and "--seeds" in issue["message"], issue
    # One printed under a plain name as well is the result, and nothing is said.
    (exp / "main.py").write_text("print('Test accuracy (seed 0): 0.6')\n"
                                 "print('Test accuracy: 0.6')\n")
    r = run_exp(exp, tmp_path / "runs2")
    assert r.rc == 0 and r.result["metrics"]["values"] == {"Test accuracy": 0.6}, r.why()
    assert r.result["metric_issues"] == [], r.why()


def test_results_printed_without_a_colon_are_named_not_silently_dropped(tmp_path):
    # karpathy/llm.c's train_gpt2.py: its config lines have colons, its results do not
    # (`val loss 6.17`, `step 20/20 | train loss 6.19 | ...`). `name value` lines stay
    # unread (prose prints so), but a run whose metrics are only its settings is told.
    exp = write_exp(tmp_path, '''
        print("using device: cpu")
        print("total desired batch size: 128")
        print("=> calculated gradient accumulation steps: 1")
        for step in range(20):
            if step % 5 == 0:
                print(f"val loss {6.25 - step * 0.004}")
            print(f"step {step+1:4d}/20 | train loss {6.23 - step * 0.002:.6f} | norm 1.6048 | "
                  f"lr 1.00e-04 | (32.58 ms | 3929 tok/s)")
        print(f"val loss {6.17646336555481}")
        print("final 19 iters avg: 103.321ms")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    (w,) = [w for w in r.result["metric_warnings"] if w["kind"] == "results_unread"]
    assert "25 lines on stdout like `val loss 6.25`" in w["message"], w
    assert "(`val loss: 6.25`)" in w["message"], w
    assert "`total desired batch size`" in w["message"], w
    # Without the config lines nothing is read, and no_metrics quotes the lines.
    (exp / "main.py").write_text("print('step 1/1 | train loss 6.19 | norm 1.8')\n"
                                 "print('val loss 6.17')\n")
    r = run_exp(exp, tmp_path / "runs2")
    assert r.rc == 4, r.why()
    (issue,) = r.result["metric_issues"]
    assert issue["kind"] == "no_metrics"
    # The line quoted is not a step's when there is another.
    assert "2 lines on stdout like `val loss 6.17`" in issue["message"], issue
    assert "(`val loss: 6.17`)" in issue["message"], issue
    # A run that also printed its result is not warned.
    (exp / "main.py").write_text("print('batch size: 128')\nprint('val loss 6.17')\n"
                                 "print('val_loss: 6.17')\n")
    r = run_exp(exp, tmp_path / "runs3")
    assert r.rc == 0 and r.result["metric_warnings"] == [], r.why()


# results.json member names labbox's JSON reader would read otherwise than other readers
# (json-c cuts a name at \u0000 and keeps the last of two equal names): the file is refused,
# naming the name, never read as some value.
@pytest.mark.parametrize("text, shown", [
    ('{"accuracy": 0.12, "accuracy\\u0000 (not the metric)": 0.99}',
     'the member name "accuracy\\u0000 (not the metric)"'),
    ('{"accuracy": 0.12, "accuracy": 0.99}', 'the member name "accuracy" is given twice'),
    ('{"r": {"accuracy": 0.12, "accur\\u0061cy": 0.99}}',
     'the member names "accuracy" (byte 7) and "accur\\u0061cy"'),
])
def test_results_json_ambiguous_names_are_refused(tmp_path, text, shown):
    exp = write_exp(tmp_path, f"open('results.json', 'w').write({text!r})\n",
                    yaml="metrics: [accuracy]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4 and r.result["status"] == "invalid_metrics", r.why()
    assert r.result["metrics"]["files"] == {}, r.why()
    assert "accuracy" not in r.result["metrics"]["values"], r.why()
    (iss,) = [i for i in r.result["metric_issues"] if i["kind"] == "unreadable"]
    assert iss["where"] == "results.json", iss
    assert iss["message"].startswith("results.json: " + shown), iss


def test_a_results_file_too_large_to_read_is_named_and_not_called_absent(tmp_path):
    """A 9 MiB results.json (past the 8 MiB labbox reads of one file) is an `unreadable`
    issue naming its size, and the run's no_metrics issue says that file was not read,
    never "no results.json"."""
    exp = write_exp(tmp_path, "import json\n"
                    "json.dump({'accuracy': 0.9, 'curve': [0.123456789] * 700000},"
                    " open('results.json', 'w'))\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4 and r.result["status"] == "invalid_metrics", r.why()
    (iss,) = [i for i in r.result["metric_issues"] if i["kind"] == "unreadable"]
    assert iss["where"] == "results.json" and "8388608" in iss["message"], iss
    (none,) = [i for i in r.result["metric_issues"] if i["kind"] == "no_metrics"]
    assert "results.json was not read" in none["message"], none
    assert "no results.json" not in none["message"], none


def test_results_json_same_name_in_different_objects_is_read(tmp_path):
    exp = write_exp(tmp_path, "open('results.json', 'w').write('{\"a\": {\"loss\": 1}, "
                    "\"b\": {\"loss\": 2}, \"c\": [{\"loss\": 3}, {\"loss\": 4}]}')\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["files"]["results.json"]["b"] == {"loss": 2}, r.why()


def test_results_json_names_with_line_breaks_are_read_and_shown_escaped(tmp_path):
    # A prompt template's scores and a character model's per-character accuracy are keyed by
    # text with line breaks: read, and never a line of their own where labbox shows them.
    exp = write_exp(tmp_path, "import json\n"
                    "json.dump({'accuracy': 0.5, 'by_template': {'Q: {q}\\nA:': 0.61},"
                    " 'per_char': {'\\n': 0.9, '\\t': 0.8}}, open('results.json', 'w'))\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    got = r.result["metrics"]["files"]["results.json"]
    assert got["accuracy"] == 0.5 and got["by_template"] == {"Q: {q}\nA:": 0.61}, got
    assert got["per_char"] == {"\n": 0.9, "\t": 0.8}, got
    p = labbox("runs", "--runs-dir", tmp_path / "runs", "show", r.result["id"])
    assert p.returncode == 0, p.stderr
    assert "\nA:" not in p.stdout and "Q: {q}\\nA:" in p.stdout, p.stdout


def test_a_position_printed_as_k_of_n_is_its_k(tmp_path):
    # Early stopping reports where it stopped as "k of n": the 7th epoch of 10 is 7, not 0.7
    # (a `runs list --metric 'best_epoch<1'` found this run). `solved: 3/4` is a fraction.
    exp = write_exp(tmp_path, '''
        print("test_acc: 0.912")
        print("best_epoch: 7/10")
        print("stopped_at_iter: 120/500")
        print("best_layer: 9/12")
        print("solved: 3/4")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    m = r.result["metrics"]
    assert m["values"] == {"test_acc": 0.912, "best_epoch": 7, "stopped_at_iter": 120,
                           "best_layer": 9, "solved": 0.75}, m["values"]
    ann = {a["metric"]: a for a in m["annotated"]}
    assert ann["best_epoch"]["position"] == "7/10" and "ratio" not in ann["best_epoch"], ann
    assert ann["best_epoch"]["text"] == "7/10" and ann["best_epoch"]["value"] == 7, ann
    assert ann["stopped_at_iter"]["position"] == "120/500", ann
    assert ann["solved"]["ratio"] == "3/4" and "position" not in ann["solved"], ann
    p = labbox("runs", "--runs-dir", tmp_path / "runs", "list", "--json", "--metric",
               "best_epoch<1")
    assert p.returncode == 0, p.stderr
    assert r.result["id"] not in p.stdout, p.stdout
    p = labbox("runs", "--runs-dir", tmp_path / "runs", "list", "--json", "--metric",
               "best_epoch=7")
    assert p.returncode == 0 and r.result["id"] in p.stdout, (p.stdout, p.stderr)


@pytest.mark.parametrize("printed", [
    # print(df.mean()) of a per-seed results frame
    "accuracy    0.9120\nf1          0.8810\nloss        0.3140\ndtype: float64",
    # print(df["accuracy"].describe())
    "count    5.000000\nmean     0.912000\nstd      0.010000\nmin      0.900000\n"
    "max      0.925000\nName: accuracy, dtype: float64",
    # a long Series, and one with a numeric name
    "0    0.91\n1    0.92\n    ... \n98   0.93\n99   0.94\nName: 0, Length: 100, dtype: float64",
])
def test_a_pandas_series_footer_is_no_metric(tmp_path, printed):
    # pandas ends a printed Series with `[Name: N, ][Length: L, ]dtype: T`: the run's results
    # are in rows labbox does not read, so it reported nothing (no_metrics), not the footer
    # as its metrics with status completed.
    exp = write_exp(tmp_path, f"print({printed!r})\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 4 and r.result["status"] == "invalid_metrics", r.why()
    assert r.result["metrics"]["values"] == {}, r.result["metrics"]["values"]
    assert [i["kind"] for i in r.result["metric_issues"]] == ["no_metrics"], r.why()


def test_name_and_dtype_in_other_shapes_stay_metrics(tmp_path):
    # Not a Series footer: a label named `Name`, a config's `dtype: bfloat16`.
    exp = write_exp(tmp_path, '''
        print("Name: resnet")
        print("dtype: bfloat16")
        print("accuracy: 0.91")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"Name": "resnet", "dtype": "bfloat16",
                                             "accuracy": 0.91}, r.result["metrics"]


def test_a_long_format_results_csv_is_read_as_names_and_values(tmp_path):
    # df.melt / tidyr / a csv.writer loop write one result a row under `metric,value`.
    exp = write_exp(tmp_path, '''
        import csv
        rows = [("accuracy", 0.91), ("f1", 0.88)]
        with open("results.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["metric", "value"])
            w.writerows(rows)
        print("wrote results.csv")
    ''', yaml="metrics: [accuracy]\n")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    assert r.result["metrics"]["files"]["results.csv"] == {"accuracy": 0.91, "f1": 0.88}, \
        r.result["metrics"]["files"]
    assert r.result["metric_issues"] == [], r.result["metric_issues"]


def test_a_long_table_with_a_name_per_seed_stays_rows(tmp_path):
    # The same name twice (one per seed) is a table of rows, read as before.
    exp = write_exp(tmp_path, '''
        with open("results.csv", "w") as f:
            f.write("metric,value\\naccuracy,0.91\\naccuracy,0.93\\n")
    ''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["files"]["results.csv"] == [
        {"metric": "accuracy", "value": 0.91}, {"metric": "accuracy", "value": 0.93}]
