"""Hugging Face transformers' Trainer: the `***** eval metrics *****` blocks that
trainer.log_metrics() prints at the end of run_glue.py and the other example scripts are the
run's final metrics (DECISION-collect30.md, docs/result-json.md). transformers is not
installed here, so the experiments print what Trainer prints: a dict repr for each log
(ProgressCallback's tqdm.write, PrinterCallback's print), then log_metrics' blocks, each row
"  {key: <K} = {value:>V}" after metrics_format (floats to 4 places, runtimes as h:mm:ss.cc,
memory as NMB, total_flos as NGF)."""
from conftest import run_exp, write_exp

# A Trainer's output, written as Trainer writes it, with load_best_model_at_end: epoch 2's
# checkpoint is restored, so the final evaluation is not the last epoch's.
TRAINER = r'''
    import datetime

    def metrics_format(metrics):
        out = {}
        for k, v in metrics.items():
            if "_mem_" in k:
                out[k] = f"{v >> 20}MB"
            elif "_runtime" in k:
                cs = int(abs(v - int(v)) * 100)
                out[k] = f"{datetime.timedelta(seconds=int(v))}.{cs:02d}"
            elif k == "total_flos":
                out[k] = f"{int(v) >> 30}GF"
            elif isinstance(v, float):
                out[k] = round(v, 4)
            else:
                out[k] = v
        return out

    def log_metrics(split, metrics):
        shown = metrics_format(metrics)
        kw = max(len(str(k)) for k in shown)
        vw = max(len(str(v)) for v in shown.values())
        print(f"***** {split} metrics *****")
        for k in sorted(shown):
            print(f"  {k: <{kw}} = {shown[k]:>{vw}}")

    for ep, acc in [(1.0, 0.8612), (2.0, 0.8934), (3.0, 0.8801)]:
        print({"loss": round(0.6 / ep, 4), "grad_norm": 2.1, "learning_rate": 2e-05 * (1 - ep / 3),
               "epoch": ep - 0.5})
        print({"eval_loss": round(0.3 - ep / 100, 4), "eval_accuracy": acc, "eval_runtime": 3.1,
               "eval_samples_per_second": 263.2, "epoch": ep})
    print({"train_runtime": 301.2047, "train_samples_per_second": 36.5, "train_loss": 0.3112,
           "epoch": 3.0})
    log_metrics("train", {"epoch": 3.0, "total_flos": 1234567891234.0, "train_loss": 0.31123,
                          "train_runtime": 301.2047, "train_samples": 3668,
                          "train_mem_cpu_alloc_delta": 12582912})
    # trainer.evaluate() on the restored best checkpoint
    log_metrics("eval", {"epoch": 3.0, "eval_accuracy": 0.893427, "eval_loss": 0.279104,
                         "eval_runtime": 3.1034, "eval_samples": 408,
                         "eval_samples_per_second": 131.468})
'''


def test_the_final_eval_block_is_the_result(tmp_path):
    r = run_exp(write_exp(tmp_path, TRAINER), tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["status"] == "completed"
    v = r.result["metrics"]["values"]
    # the block's numbers, not the last epoch's dict (0.8801, 0.27)
    assert v["eval_accuracy"] == 0.8934 and v["eval_loss"] == 0.2791, v
    assert v["eval_samples"] == 408 and v["train_samples"] == 3668, v
    assert v["eval_samples_per_second"] == 131.468 and v["train_loss"] == 0.3112, v
    # a runtime shown as 0:05:01.20 is not read: the seconds are the dicts'
    assert v["train_runtime"] == 301.2047 and v["eval_runtime"] == 3.1, v
    # memory, flos and the epoch counter are no metrics of the block
    assert not {"epoch", "total_flos", "train_mem_cpu_alloc_delta"} & set(v), v
    assert r.result["metric_issues"] == [], r.why()


def test_a_later_per_log_dict_does_not_replace_the_block(tmp_path):
    # With disable_tqdm, PrinterCallback prints every log: an evaluate() on another set after
    # the final block, under the same names, is printed as a dict and not put in a block.
    exp = write_exp(tmp_path, TRAINER + r'''
    print({"eval_loss": 0.61, "eval_accuracy": 0.7012, "eval_runtime": 2.0, "epoch": 3.0})
    print("done")
''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v["eval_accuracy"] == 0.8934 and v["eval_loss"] == 0.2791, v
    # the dict's runtime replaces the earlier dicts' (the block gave none)
    assert v["eval_runtime"] == 2.0, v


def test_the_scripts_own_json_line_after_a_block_is_its_result(tmp_path):
    """Only Trainer's per-log dicts (Python's repr, with an epoch) are outranked by a block:
    a baseline block printed before training, then the script's own JSON result line (or a
    dict of its own without an epoch), is last-wins as every other line is."""
    exp = write_exp(tmp_path, r'''
    import json
    print("***** eval metrics *****")
    print("  eval_accuracy           =     0.1234")
    print("  eval_loss               =     2.3026")
    print()
    for acc in (0.5, 0.6, 0.7):
        print({'eval_accuracy': acc, 'epoch': 1.0})
    print(json.dumps({"eval_accuracy": 0.95}))
    print({'eval_loss': 0.31})
''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    v = r.result["metrics"]["values"]
    assert v["eval_accuracy"] == 0.95 and v["eval_loss"] == 0.31, v


def test_trainers_running_banners_and_rows_without_a_block_are_not_read(tmp_path):
    exp = write_exp(tmp_path, r'''
    print("***** Running Evaluation *****")
    print("  Num examples = 408")
    print("  Batch size = 8")
    print("  eval_accuracy = 0.5")
    print("accuracy: 0.91")
''')
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 0, r.why()
    assert r.result["metrics"]["values"] == {"accuracy": 0.91}, r.why()
