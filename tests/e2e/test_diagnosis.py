"""Failures named by their cause and the warnings a researcher wants (issue 9 §4), through the
real binary with small real experiments: what labbox says in result.json's `failure` and
`diagnosis_warnings`."""
import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

from conftest import PYTHON, labbox, run_exp, write_exp

PERMISSIVE = ("--policy", "permissive")


def failure_of(tmp_path, main_py, *opts, files=None):
    exp = write_exp(tmp_path, main_py, files=files)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, *opts)
    assert r.rc == 1, r.why()
    assert r.result["failure"], r.why()
    return r, r.result["failure"]


def test_nul_before_the_traceback_does_not_hide_it(tmp_path):
    # torch forwards a worker's traceback after a NUL byte; the classifier must still read it.
    r, f = failure_of(tmp_path, """
        import sys
        print("epoch 0 starting", flush=True)
        sys.stderr.write("\\0\\0")
        sys.stderr.flush()
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have "
                           "an NVIDIA GPU and installed a driver from "
                           "http://www.nvidia.com/Download/index.aspx")
    """)
    assert f["class"] == "gpu_unavailable", r.why()
    assert f.get("exception") == "RuntimeError", r.why()
    assert any("Found no NVIDIA driver" in e for e in f["evidence"]), r.why()
    assert "--gpus" in f["suggestion"]


def test_binary_output_then_traceback(tmp_path):
    r, f = failure_of(tmp_path, """
        import sys, pickle
        sys.stdout.buffer.write(pickle.dumps({"acc": 0.5}) + b"\\n\\x00\\xff\\xfe\\x07\\n")
        sys.stdout.flush()
        import labbox_no_such_module_binary
    """, "-q")
    assert f["class"] == "missing_package", r.why()
    assert any("labbox_no_such_module_binary" in e for e in f["evidence"]), r.why()


def test_assert_on_cuda_is_gpu_unavailable(tmp_path):
    r, f = failure_of(tmp_path, """
        def pick_device(name):
            available = False  # what torch.cuda.is_available() says on this host
            assert available, f"Device set to {name}, but {name} is unavailable."
            return name

        pick_device("cuda")
    """)
    assert f["class"] == "gpu_unavailable", r.why()
    assert f.get("exception") == "AssertionError", r.why()


@pytest.mark.skipif(any(Path("/dev").glob("nvidia[0-9]*")),
                    reason="this host has an NVIDIA GPU: a CUDA out-of-memory may be its")
def test_a_cuda_oom_on_a_machine_without_gpus_is_not_the_gpus(tmp_path):
    """CPU-only code whose own guard raises torch's words: no GPU ran out of memory here."""
    r, f = failure_of(tmp_path, """
        MAX_BATCH = 32
        def train(batch):
            if batch > MAX_BATCH:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)")
            return 0.8
        print("device: cpu")
        acc = train(128)
        print("acc:", acc)
    """)
    m = r.file_json("manifest.json")
    assert m["machine"]["gpu_device_nodes"] == 0, m["machine"]
    assert f["class"] != "gpu_oom" and f["confidence"] != "high", f
    assert f["class"] == "code_error" and "no NVIDIA GPU" in f["summary"], f
    assert f["code_location"]["line"] == 4 and f["escalation"] is None, f
    assert "--gpus all" not in f["suggestion"], f


def _torch_without_cuda():
    import subprocess
    p = subprocess.run([PYTHON, "-c", "import torch, sys; sys.exit(0 if not torch.backends.cuda.is_built() else 3)"],
                       capture_output=True)
    return p.returncode == 0


@pytest.mark.skipif(not _torch_without_cuda(), reason="needs a torch built without CUDA")
def test_a_torch_built_without_cuda_is_the_environment(tmp_path):
    """`.to("cuda")` with a CPU-only torch: "Torch not compiled with CUDA enabled" says the
    interpreter's torch has no CUDA, which --gpus cannot change: the environment's, with a
    CUDA build of torch to install."""
    r, f = failure_of(tmp_path, """
        import torch
        model = torch.nn.Linear(4, 2).to("cuda")
        print("loss:", 0.0)
    """)
    assert f["class"] == "wrong_env", r.why()
    esc = f["escalation"]
    assert esc["grants"] == "environment" and esc["flag"] == "--python VENV/bin/python", esc
    assert esc["environment"] == "pip install torch", esc
    assert "--gpus alone cannot help" in f["suggestion"], f


def test_a_loader_that_asserts_its_files_exist_is_missing_data(tmp_path):
    """llm.c's loader: glob finds nothing and raises nothing, so the loader asserts; the
    message names a path the staged experiment does not have. A path that is staged keeps the
    code's error (the check failed for another reason)."""
    main = """
        import glob

        class DistributedDataLoader:
            def __init__(self, filename_pattern):
                self.files = sorted(glob.glob(filename_pattern))
                assert len(self.files) > 5, f"did not find any files that match the pattern {filename_pattern}"

        DistributedDataLoader("dev/data/shards/train_*.bin")
    """
    r, f = failure_of(tmp_path, main)
    assert f["class"] == "missing_data", r.why()
    assert f["confidence"] == "medium", f
    assert "dev/data/shards/train_*.bin" in f["summary"] and "-v SRC:DST:ro" in f["suggestion"], f
    assert f["code_location"]["file"] == "main.py", f
    r, f = failure_of(tmp_path / "staged", main, files={"dev/data/shards/train_000.bin": "x"})
    assert f["class"] == "code_error", r.why()


@pytest.mark.parametrize("module,project", [
    ("umap", "umap-learn"), ("fitz", "PyMuPDF"), ("Bio", "biopython"),
    ("community", "python-louvain"), ("mpl_toolkits.mplot3d", "matplotlib"), ("gym", "gym"),
])
def test_missing_package_names_the_project_that_provides_the_import(tmp_path, module, project):
    """The escalation's environment is what a pipeline installs: the PyPI project that
    provides the module, not a project of the module's name (umap, fitz and Bio are other,
    unrelated projects; gymnasium does not provide `gym`)."""
    import subprocess
    top = module.split(".")[0]
    if subprocess.run([PYTHON, "-c", f"import {module}"], capture_output=True).returncode == 0:
        pytest.skip(f"{module} is installed here")
    r, f = failure_of(tmp_path, f"""
        import {module}
        print("ok: 1")
    """)
    assert f["class"] == "missing_package", r.why()
    assert f["escalation"]["environment"] == f"pip install {project}", (top, f["escalation"])


def test_a_run_waiting_at_a_prompt_is_not_told_to_raise_the_budget(tmp_path):
    """The budget ended a run that used almost no CPU and whose last output asks for a key
    press: it waited for a reader labbox never gives, so no budget is enough. A run that
    only sleeps (no prompt) stays a timeout."""
    def timed_out(name, main_py):
        exp = write_exp(tmp_path / name, main_py)
        r = run_exp(exp, tmp_path / "runs", "--budget", "3")
        assert r.rc == 124 and r.result["status"] == "timeout", r.why()
        return r, r.result["failure"]

    r, f = timed_out("prompt", """
        import time
        print("loss: 0.5")
        print("Program paused. Press enter to continue.", flush=True)
        time.sleep(60)
    """)
    assert f["class"] == "code_error" and f["confidence"] == "medium", r.why()
    assert "keyboard input" in f["summary"] and "Press enter" in f["summary"], f
    assert "raise the budget" not in f["suggestion"] and f["escalation"] is None, f
    r, f = timed_out("sleeps", """
        import time
        print("waiting for the simulation server", flush=True)
        time.sleep(60)
    """)
    assert f["class"] == "timeout", r.why()


HF_EXC = '''
class DatasetNotFoundError(FileNotFoundError):
    """The shape of datasets.exceptions.DatasetNotFoundError."""
'''


def test_dataset_not_found_is_missing_data(tmp_path):
    r, f = failure_of(tmp_path, """
        from hfdatasets.exceptions import DatasetNotFoundError

        def load_dataset(name):
            raise DatasetNotFoundError(
                f"Dataset '{name}' doesn't exist on the Hub or cannot be accessed.")

        load_dataset("stanfordnlp/imdbx")
    """, files={"hfdatasets/__init__.py": "", "hfdatasets/exceptions.py": HF_EXC})
    assert f["class"] == "missing_data", r.why()
    assert f["exception"].endswith("DatasetNotFoundError"), r.why()
    assert "-v SRC:DST:ro" in f["suggestion"]


def test_dataset_not_found_after_a_denied_connection_is_network(tmp_path):
    # The Hub lookup fails on the sandbox's denied socket, then the loader says "not found":
    # the chain's root is the network.
    r, f = failure_of(tmp_path, """
        import socket
        from hfdatasets.exceptions import DatasetNotFoundError

        def load_dataset(name):
            try:
                socket.create_connection(("127.0.0.1", 9), timeout=2)
            except OSError:
                raise DatasetNotFoundError(
                    f"Dataset '{name}' doesn't exist on the Hub or cannot be accessed.")

        load_dataset("imdb")
    """, files={"hfdatasets/__init__.py": "", "hfdatasets/exceptions.py": HF_EXC})
    assert f["class"] in ("network", "sandbox_restriction"), r.why()
    assert "--network" in f["suggestion"], r.why()
    assert any("DatasetNotFoundError" in e for e in f["evidence"]), r.why()


def test_offline_hub_is_network(tmp_path):
    r, f = failure_of(tmp_path, """
        raise ConnectionError("Couldn't reach 'imdb' on the Hub (LocalEntryNotFoundError)")
    """)
    assert f["class"] == "network", r.why()


def test_root_cause_of_a_chain(tmp_path):
    r, f = failure_of(tmp_path, """
        def save():
            try:
                open("/usr/labbox-results.json", "w")
            except OSError as e:
                raise ValueError("save failed") from e

        try:
            save()
        except ValueError:
            raise SystemError("run aborted")
    """)
    assert f["class"] == "sandbox_restriction", r.why()
    assert f["exception"] in ("OSError", "PermissionError"), r.why()
    assert any("run aborted" in e for e in f["evidence"]), r.why()


def test_full_dev_shm_names_shm_size(tmp_path):
    # /dev/shm of 1 MiB and a process that writes 8 MiB there: a real ENOSPC in the sandbox.
    r, f = failure_of(tmp_path, """
        with open("/dev/shm/features.bin", "wb") as fh:
            for _ in range(8):
                fh.write(b"x" * (1 << 20))
    """, "--shm-size", "1m")
    assert f["class"] == "sandbox_restriction", r.why()
    assert "--shm-size" in f["suggestion"], r.why()


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_dataloader_bus_error_names_shm_size(tmp_path):
    # A real DataLoader whose workers hand over batches larger than /dev/shm.
    r, f = failure_of(tmp_path, """
        import torch
        from torch.utils.data import DataLoader, Dataset

        class Big(Dataset):
            def __len__(self):
                return 64
            def __getitem__(self, i):
                return torch.ones(1 << 20)  # 4 MiB a sample

        for batch in DataLoader(Big(), batch_size=8, num_workers=2):
            pass
    """, "--shm-size", "2m", "--budget", "120")
    assert f["class"] == "sandbox_restriction", r.why()
    assert "--shm-size" in f["suggestion"], r.why()


# --- diagnosis_warnings ---------------------------------------------------------------------

def warnings_of(tmp_path, main_py, *opts, files=None, rc=0, args=()):
    exp = write_exp(tmp_path, main_py, files=files)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, *opts, args=args)
    assert r.rc == rc, r.why()
    ws = r.result["diagnosis_warnings"]
    assert isinstance(ws, list), r.why()
    assert ws == r.file_json("result.json")["diagnosis_warnings"]
    for w in ws:
        assert w["kind"] and w["message"] and w["evidence"], w
    return r, ws


def kinds(ws, kind):
    return [w for w in ws if w["kind"] == kind]


def test_a_clean_run_has_no_diagnosis_warnings(tmp_path):
    r, ws = warnings_of(tmp_path, """
        for step in range(5):
            print(f"step {step} loss: {2.0 / (step + 1):.3f}")
        print("accuracy: 0.91")
    """, files={"config.py": "lr = 0.1\n", "utils.py": "\n"})
    assert ws == [], r.why()


def test_diverging_loss(tmp_path):
    r, ws = warnings_of(tmp_path, """
        w = 1.0
        for step in range(8):
            loss = (3 * w) ** 2
            print(f"step {step} loss: {loss:.4g}")
            w *= 4.0  # the learning rate is far too high
        print("final_loss: %g" % loss)
    """)
    (w,) = kinds(ws, "loss_divergence")
    assert w["metric"] == "loss"
    assert any("step 0 loss: 9" in e for e in w["evidence"]), w


def test_final_losses_of_several_datasets_are_no_divergence(tmp_path):
    # Three datasets' final test losses, under `dataset: X` blocks or `[X]` tags: the label
    # changes between the values, so they are no series that rose. A loss that does rise
    # under one label still diverged, and the warning says which.
    r, ws = warnings_of(tmp_path / "blocks", """
        for ds, loss, acc in [("mnist", 0.021, 0.99), ("svhn", 0.25, 0.95), ("cifar100", 2.61, 0.41)]:
            print(f"dataset: {ds}")
            print(f"test_loss: {loss}")
            print(f"test_acc: {acc}")
            print()
    """)
    assert not kinds(ws, "loss_divergence"), ws
    r, ws = warnings_of(tmp_path / "tags", """
        for ds, loss, acc in [("mnist", 0.021, 0.99), ("svhn", 0.25, 0.95), ("cifar100", 2.61, 0.41)]:
            print(f"[{ds}] loss: {loss}")
            print(f"[{ds}] acc: {acc}")
    """)
    assert not kinds(ws, "loss_divergence"), ws
    r, ws = warnings_of(tmp_path / "rose", """
        print("dataset: svhn")
        for step, loss in enumerate([0.5, 0.9, 8.0, 75.0]):
            print(f"step {step} loss: {loss}")
        print("acc: 0.1")
    """)
    (w,) = kinds(ws, "loss_divergence")
    assert w["metric"] == "loss" and "loss of svhn diverged" in w["message"], w


def test_loss_reaching_nan_in_a_condition(tmp_path):
    r, ws = warnings_of(tmp_path, """
        import math
        print("condition: lr_high")
        for step, loss in enumerate([0.69, 0.71, 5.3, math.inf - math.inf]):
            print(f"condition=lr_high step={step} loss: {loss}")
        print("accuracy: 0.5")
    """, rc=4)  # the NaN tagged value is a metric issue too
    (w,) = kinds(ws, "loss_divergence")
    assert w["condition"] == "lr_high" and "NaN" in w["message"], w


def test_numpy_runtime_warnings(tmp_path):
    r, ws = warnings_of(tmp_path, """
        import numpy as np
        z = np.array([-800.0, 0.0, 800.0])
        p = 1 / (1 + np.exp(-z))
        loss = -np.log(p)
        nanmean = np.array([0.0]) / np.array([0.0])
        print(f"accuracy: 0.75")
    """)
    got = {w["warning"] for w in kinds(ws, "runtime_warning")}
    assert {"overflow", "divide_by_zero", "invalid_value"} <= got, r.why()
    over = [w for w in kinds(ws, "runtime_warning") if w["warning"] == "overflow"][0]
    assert any("RuntimeWarning: overflow encountered in exp" in e for e in over["evidence"])


def test_near_chance_accuracy_cifar10(tmp_path):
    r, ws = warnings_of(tmp_path, """
        print("condition: baseline")
        print("test_accuracy: 0.1012")
        print("condition: tuned")
        print("test_accuracy: 0.62")
    """, args=("--dataset", "cifar10"))
    (w,) = kinds(ws, "near_chance_accuracy")
    assert w["condition"] == "baseline" and w["classes"] == 10, w
    assert any("--dataset cifar10" in e for e in w["evidence"]), w


def test_near_chance_accuracy_from_num_classes(tmp_path):
    r, ws = warnings_of(tmp_path, """
        print("num_classes: 100")
        print("acc: 1.1%")
    """)
    (w,) = kinds(ws, "near_chance_accuracy")
    assert w["classes"] == 100, w


def test_near_chance_is_not_said_of_a_gap_or_a_spread_of_accuracy(tmp_path):
    """CIFAR-10 at 0.905 test accuracy: its generalization gap, CI width, IQR, standard error
    and margin over a baseline sit near 0.1 = 1/10, and none of them is an accuracy."""
    r, ws = warnings_of(tmp_path, """
        print("dataset: cifar10")
        print("train_acc: 1.0")
        print("test_acc: 0.905")
        print("acc_gap: 0.095")
        print("acc_ci95: 0.11")
        print("acc_iqr: 0.09")
        print("acc_stderr: 0.1")
        print("acc_margin: 0.1")
        print("train_test_acc_gap: 0.1")
    """)
    assert r.result["metrics"]["values"]["acc_gap"] == 0.095, r.why()
    assert kinds(ws, "near_chance_accuracy") == [], ws


def test_time_guard_skipping_most_conditions(tmp_path):
    r, ws = warnings_of(tmp_path, """
        import time
        conditions = ["baseline", "dropout", "mixup", "cutmix", "label_smoothing", "ema"]
        start = time.time()
        for i, condition in enumerate(conditions):
            if i >= 2:
                print(f"TIME_GUARD: {time.time() - start + 8:.1f}s - saving partial results")
                break
            print(f"condition: {condition}")
            print(f"accuracy: {0.8 + i / 100}")
    """, "--budget", "10")
    (w,) = kinds(ws, "time_guard_skipped")
    assert w["planned"] == 6 and w["reported"] == 2, w


def test_worker_exceptions_of_a_completed_run(tmp_path):
    """A thread and a child process that die of an uncaught exception do not end the main
    process: it reports its metrics and exits 0, with their share of the work missing. The
    run stays completed (warnings never change the verdict) and says so; a traceback the main
    process caught and printed itself is not one of them."""
    r, ws = warnings_of(tmp_path, """
        import multiprocessing as mp, threading, traceback
        scores = []
        def evaluate(split):
            if split == "test":
                raise ValueError("shapes (64,10) and (32,) not aligned")
            scores.append(0.9)
        def export():
            raise OSError("No space left on device")
        if __name__ == "__main__":
            for split in ("val", "test"):
                t = threading.Thread(target=evaluate, args=(split,))
                t.start(); t.join()
            p = mp.get_context("fork").Process(target=export)
            p.start(); p.join()
            try:
                1 / 0
            except ZeroDivisionError:
                traceback.print_exc()
            # stdout and stderr are two pipes: this line can stand inside a traceback in
            # run.log, and the warning still quotes the exception's line
            print("accuracy:", sum(scores) / len(scores))
    """)
    assert r.result["status"] == "completed", r.why()
    (w,) = kinds(ws, "worker_exception")
    assert w["count"] == 2, w
    ev = " | ".join(w["evidence"])
    assert "Exception in thread" in ev and "ValueError: shapes (64,10)" in ev, w
    assert "Process-1:" in ev and "OSError: No space left on device" in ev, w
    assert "ZeroDivisionError" not in ev, w


def test_stdlib_shadow_is_named(tmp_path):
    # The experiment's json.py hides the real module from everything, numpy included.
    r, ws = warnings_of(tmp_path, """
        import json
        print("accuracy: 0.9")
        json.dump({"accuracy": 0.9}, open("results.json", "w"))
    """, files={"json.py": "def dump(obj, f):\n    f.write(repr(obj))\n",
                "config.py": "lr = 0.1\n"})
    (w,) = kinds(ws, "stdlib_shadow")
    assert w["module"] == "json" and w["file"] == "json.py", w
    assert "exp/json.py" in w["evidence"]


def test_refusals_the_code_went_on_after_are_named(tmp_path):
    """A refusal the code caught (a crafted pickle read in a try) leaves a completed run whose
    numbers were made without what was refused: result.json says so, and so does the summary
    a researcher reads."""
    exp = write_exp(tmp_path, """
        import pickle
        try:
            pickle.loads(b"cos\\nsystem\\n(S'true'\\ntR.")
        except PermissionError:
            print("went on without it")
        print("accuracy: 0.9")
    """)
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on")
    assert r.rc == 0 and r.result["status"] == "completed", r.why()
    (w,) = kinds(r.result["diagnosis_warnings"], "gate_refusals_caught")
    assert "pickle.find_class" in w["message"] and "main.py:3" in w["message"], w
    assert w["evidence"] and '["os","system"]' in w["evidence"][0], w
    plain = labbox("run", "--python", PYTHON, "--runs-dir", tmp_path / "runs2", "--runtime-gate",
                   "on", exp)
    assert plain.returncode == 0, plain.stderr
    assert "gate_refusals_caught" in plain.stdout and "main.py:3" in plain.stdout, plain.stdout


def test_no_refusal_warning_when_the_refusal_is_the_failure(tmp_path):
    r, f = failure_of(tmp_path, """
        import pickle
        pickle.loads(b"cos\\nsystem\\n(S'true'\\ntR.")
    """, "--runtime-gate", "on")
    assert f["class"] == "gate_refused", r.why()
    assert kinds(r.result["diagnosis_warnings"], "gate_refusals_caught") == [], r.why()


def test_a_caught_refusal_does_not_take_over_an_unrelated_crash(tmp_path):
    """An optional cache write the gate refuses, caught and printed with its traceback: the
    run went on and then crashed on a shape mismatch of its own. The crash is the failure
    (code_error, its line), not the refusal; the refusal is still said, as the caught
    refusal's warning, and `labbox explain` says the same."""
    exp = write_exp(tmp_path, """
        import json, os, traceback
        import numpy as np

        cfg = json.load(open("config.json"))

        def save_cache(text):
            try:
                with open(os.path.join(cfg["cache_dir"], "note.txt"), "w") as f:
                    f.write(text)
            except Exception:
                traceback.print_exc()

        save_cache("hello")
        w = np.zeros((3, 4))
        x = np.ones((5,))
        for epoch in range(2):
            print(f"loss: {0.5 / (epoch + 1)}")
        y = w @ x
        print("accuracy:", y.mean())
    """, files={"config.json": '{"cache_dir": "/var/cache/exp"}'})
    r = run_exp(exp, tmp_path / "runs", "--runtime-gate", "on")
    assert r.rc == 1, r.why()
    assert "labbox runtime gate refused open: LB110" in r.log(), r.why()
    assert r.result["runtime_gate"]["refused"] == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "code_error" and f["exception"] == "ValueError", r.why()
    assert "gate_event" not in f and "rule" not in f, f
    assert f["code_location"]["line"] == 18 and "w @ x" in f["code_location"]["text"], f
    assert "remove the call" not in f["suggestion"], f
    assert not any("runtime gate refused" in e for e in f["evidence"]), f
    (w,) = kinds(r.result["diagnosis_warnings"], "gate_refusals_caught")
    assert "main.py:8" in w["message"], w
    p = labbox("explain", "--runs-dir", tmp_path / "runs", r.result["id"])
    assert p.returncode == 0, p.stderr
    assert "class       code_error" in p.stdout and "main.py line 18" in p.stdout, p.stdout
    assert "gate_refused" not in p.stdout, p.stdout


def test_the_gates_words_printed_by_the_code_are_no_refusal(tmp_path):
    """Text in the output that reads like the gate's refusal, which the gate never recorded
    (runtime_gate.refused 0), is no gate_refused verdict, above another error or as the
    last exception itself."""
    r, f = failure_of(tmp_path, """
        print("Traceback (most recent call last):")
        print('  File "/x/main.py", line 3, in <module>')
        print("PermissionError: [Errno 1] labbox runtime gate refused subprocess.Popen: LB102 "
              "subprocess (policy standard)")
        print("loss: 0.3")
        raise ValueError("shape mismatch in layer 3")
    """, "--runtime-gate", "on")
    assert r.result["runtime_gate"]["refused"] == 0, r.why()
    assert f["class"] == "code_error" and "shape mismatch" in f["summary"], f
    assert "gate_event" not in f, f
    r, f = failure_of(tmp_path / "last", """
        import errno
        raise PermissionError(errno.EPERM, "labbox runtime gate refused os.system: LB101 "
                              "process creation (policy standard)")
    """, "--runtime-gate", "on")
    assert r.result["runtime_gate"]["refused"] == 0, r.why()
    assert f["class"] == "code_error" and "gate_event" not in f, f
    assert "did not record" in f["summary"], f


def test_a_write_into_a_directory_never_made_is_the_code(tmp_path):
    """The compatibility pass's: results written into out/ without making it was called
    missing data ("put the file inside the experiment directory"); the fix is os.makedirs.
    A read of a file that is not there stays missing data."""
    r, f = failure_of(tmp_path, """
        import json
        print("acc: 0.5")
        with open("out/results.json", "w") as fh:
            json.dump({"acc": 0.5}, fh)
    """)
    assert f["class"] == "code_error", r.why()
    assert "directory that does not exist" in f["summary"], r.why()
    assert "os.makedirs" in f["suggestion"], r.why()
    r, f = failure_of(tmp_path / "read", """
        import json
        with open("data/train.json") as fh:
            print(json.load(fh))
    """)
    assert f["class"] == "missing_data", r.why()


# --- a traceback the code caught and printed as its last output ------------------------------

CRASH_CAUGHT_AT_TOP = """
    import traceback

    def main():
        weights = [0.5] * 8
        for epoch in range(10):
            width = 8 if epoch < 3 else 9  # the bug hits at epoch 3
            if width != len(weights):
                raise ValueError(f"shapes ({width},) and ({len(weights)},) not aligned")
            print(f"train_loss: {5.0 - epoch / 10:.4f}")
        print("test_acc: 0.9")

    if __name__ == "__main__":
        try:
            main()
        except Exception:
            traceback.print_exc()
"""


def evidence_points_at_run_log(r, w):
    """Every "run.log line N: TEXT" of a warning's evidence is run.log's line N."""
    lines = r.log().splitlines()
    for e in w["evidence"]:
        head, _, text = e.partition(": ")
        assert head.startswith("run.log line "), e
        n = int(head[len("run.log line "):])
        assert lines[n - 1].strip() == text.strip(), (e, lines[n - 1])
    return [int(e.split(":")[0][len("run.log line "):]) for e in w["evidence"]]


def test_a_crash_caught_at_the_top_and_printed_last_is_named(tmp_path):
    """`try: main() except Exception: traceback.print_exc()`: main() crashes at epoch 3 of 10,
    the traceback is the program's last output, and it exits 0. The run stays completed (a
    warning never changes the verdict), and a warning names the exception the code caught
    and points at the traceback's lines; explain and the summary show it. The same program
    without the crash has no such warning."""
    r, ws = warnings_of(tmp_path / "a", CRASH_CAUGHT_AT_TOP)
    assert r.result["status"] == "completed" and r.result["failure"] is None, r.why()
    assert r.result["metrics"]["values"].get("train_loss") == 4.8, r.why()
    (w,) = kinds(ws, "exception_caught_at_end")
    assert w["exception"] == "ValueError", w
    assert "ValueError: shapes (9,) and (8,) not aligned" in w["message"], w
    assert "main.py line 8, in main" in w["message"] and "exited 0" in w["message"], w
    assert "incomplete" in w["message"], w
    assert "process it started" not in w["message"], w  # the code starts none
    lines = evidence_points_at_run_log(r, w)
    log = r.log().splitlines()
    assert log[lines[0] - 1] == "Traceback (most recent call last):", w
    assert log[lines[2] - 1].startswith("ValueError: shapes (9,)"), w
    assert 'main.py", line 8, in main' in w["evidence"][1], w
    # explain shows it, and does not say "nothing failed" alone
    p = labbox("explain", "--runs-dir", tmp_path / "a" / "runs", r.result["id"])
    assert p.returncode == 0, p.stderr
    assert "the program printed a traceback as its last output" in p.stdout, p.stdout
    assert "nothing failed by its exit status" in p.stdout, p.stdout
    doc = json.loads(labbox("explain", "--json", "--runs-dir", tmp_path / "a" / "runs",
                            r.result["id"]).stdout)
    assert kinds(doc["diagnosis_warnings"], "exception_caught_at_end"), doc
    # the same program without the bug: nothing to say
    r, ws = warnings_of(tmp_path / "b", CRASH_CAUGHT_AT_TOP.replace("9 ", "8 "))
    assert r.result["metrics"]["values"].get("test_acc") == 0.9, r.why()
    assert ws == [], r.why()
    p = labbox("explain", "--runs-dir", tmp_path / "b" / "runs", r.result["id"])
    assert "nothing failed\n" in p.stdout, p.stdout


def test_logging_exception_as_the_last_output_is_named(tmp_path):
    """logging.exception prints "ERROR:root:..." and then the traceback; an exception ignored
    at exit (a finalizer's, printed after it) is the interpreter's, not the program's
    output, and does not hide it."""
    r, ws = warnings_of(tmp_path / "a", """
        import logging
        logging.basicConfig()

        def evaluate(scores):
            return scores["test"]

        if __name__ == "__main__":
            print("val_acc: 0.81", flush=True)
            try:
                evaluate({"val": 0.81})
            except Exception:
                logging.exception("evaluation failed")
    """)
    (w,) = kinds(ws, "exception_caught_at_end")
    assert w["exception"] == "KeyError" and "KeyError: 'test'" in w["message"], w
    evidence_points_at_run_log(r, w)
    assert "ERROR:root:evaluation failed" in r.log(), r.why()
    r, ws = warnings_of(tmp_path / "b", """
        import traceback

        class Loader:
            def __del__(self):
                raise RuntimeError("close failed")

        loader = Loader()
        print("val_acc: 0.81", flush=True)
        try:
            [1, 2][5]
        except Exception:
            traceback.print_exc()
        del loader
    """)
    assert "Exception ignored in" in r.log(), r.why()
    (w,) = kinds(ws, "exception_caught_at_end")
    assert w["exception"] == "IndexError", w
    assert "RuntimeError" not in w["message"], w


def test_a_handled_traceback_the_program_went_on_after_is_not_named(tmp_path):
    """A traceback in the middle of a run is normal: the code handled it ("falling back ...")
    and went on to its results. Only one that nothing of the program's follows is named; the
    same program that stops after the traceback is. A thread's traceback last is
    worker_exception's alone."""
    handled = """
        import logging, sys, time, traceback
        logging.basicConfig()
        print("val_loss: 0.7", flush=True)
        try:
            import labbox_no_such_fast_kernel
        except ImportError:
            traceback.print_exc()
            logging.warning("falling back to the slow kernel")
        STOP_HERE
        time.sleep(0.3)  # the work done after it
        for epoch in range(3):
            print(f"epoch {epoch} loss: {1.0 / (epoch + 1):.3f}", flush=True)
        print("accuracy: 0.9")
    """
    r, ws = warnings_of(tmp_path / "a", handled.replace("STOP_HERE", ""))
    assert "labbox_no_such_fast_kernel" in r.log(), r.why()
    assert kinds(ws, "exception_caught_at_end") == [], r.why()
    # output after it on its own stream (stderr), which keeps its order
    r, ws = warnings_of(tmp_path / "b", handled.replace("STOP_HERE", "sys.exit(0)").replace(
        'logging.warning("falling back to the slow kernel")', ""))
    (w,) = kinds(ws, "exception_caught_at_end")
    assert w["exception"] in ("ImportError", "ModuleNotFoundError"), w
    r, ws = warnings_of(tmp_path / "c", handled.replace("STOP_HERE", "sys.exit(0)"))
    assert kinds(ws, "exception_caught_at_end") == [], r.why()
    # a thread's death printed last
    r, ws = warnings_of(tmp_path / "d", """
        import threading
        print("accuracy: 0.9", flush=True)
        def export():
            raise OSError("No space left on device")
        t = threading.Thread(target=export)
        t.start(); t.join()
    """)
    assert kinds(ws, "worker_exception"), r.why()
    assert kinds(ws, "exception_caught_at_end") == [], r.why()


# --- what ended the run is its root cause -------------------------------------------------------

def test_a_run_that_stops_itself_is_explained_by_its_last_words_not_an_earlier_line(tmp_path):
    """A script that prints a device, cache or handled-error line and later stops itself with
    sys.exit is explained by its last words (the sys.exit message, or its last line), not by
    the earlier line's keywords: no GPU, no network and no sandbox grant is offered, and
    --escalate network does not rerun it with the host network. A library's own error line
    printed last still names its cause."""
    cases = {
        "gpu": ("""
            import sys
            print("torch.cuda.is_available() is False: training on CPU", flush=True)
            print("val_acc: 0.42", flush=True)
            sys.exit("val_acc 0.42 is below the acceptance threshold 0.5; not saving the model")
        """, "below the acceptance threshold"),
        "hub": ("""
            import sys
            print("tokenizer: bert-base-uncased (cached copy of huggingface.co/bert-base-uncased)")
            print("val_acc: 0.42")
            sys.exit(2)
        """, "val_acc: 0.42"),
        "perm": ("""
            import os, sys
            try:
                os.nice(-5)
            except PermissionError:
                print("note: could not raise priority (Operation not permitted); continuing")
            print("val_acc: 0.42")
            print("sanity check failed: labels and predictions have different lengths")
            sys.exit(1)
        """, "sanity check failed"),
    }
    for name, (code, last_words) in cases.items():
        exp = write_exp(tmp_path / name, code)
        r = run_exp(exp, tmp_path / name / "runs", *PERMISSIVE)
        assert r.rc == 1, r.why()
        f = r.result["failure"]
        assert r.result["runtime_gate"]["uncaught"] is None, r.why()
        assert f["class"] == "code_error", (name, f)
        assert last_words in f["summary"] and any(last_words in e for e in f["evidence"]), f
        assert f["escalation"] is None, f
    # the standing permission is not used on a line that did not end the run
    exp = tmp_path / "hub" / "exp"
    r = run_exp(exp, tmp_path / "esc", *PERMISSIVE, "--escalate", "network")
    assert [a["flags"]["network"] for a in r.result["attempts"]] == ["none"], r.why()
    # a library that printed its error last and exited: that line names the cause
    r, f = failure_of(tmp_path / "lib", """
        import sys
        print("loading model", flush=True)
        print("ERROR: could not reach huggingface.co: [Errno -3] Temporary failure in name "
              "resolution", file=sys.stderr)
        sys.exit(1)
    """)
    assert f["class"] == "network", f


def test_sys_exit_with_a_finished_message_is_named_as_such(tmp_path):
    """sys.exit("done") after the results: Python prints the message and exits with status 1
    whatever it says. The verdict says the message reports the run finished and that status 1
    comes from sys.exit given a string; it does not ask to fix what "done" reports. A message
    that reports a problem keeps the usual advice."""
    r, f = failure_of(tmp_path / "a", """
        import sys
        print("accuracy: 0.91")
        print("f1: 0.88")
        sys.exit("done")
    """)
    assert r.rc == 1 and r.result["metrics"]["values"] == {"accuracy": 0.91, "f1": 0.88}, r.why()
    assert f["class"] == "code_error", f
    assert 'sys.exit("message")' in f["summary"] and "says it finished" in f["summary"], f
    assert "sys.exit(0)" in f["suggestion"] and "fix what it reports" not in f["suggestion"], f
    r, f = failure_of(tmp_path / "b", """
        import sys
        print("accuracy: 0.41")
        sys.exit("not done: accuracy 0.41 is below the 0.5 threshold")
    """)
    assert "fix what it reports" in f["suggestion"] and "says it finished" not in f["summary"], f


def test_recursion_error_with_a_traceback_longer_than_the_tail(tmp_path):
    """A RecursionError in the experiment's own recursive function (a cycle in its data):
    the traceback is 2,000 lines (two alternating frames, so Python does not shorten it),
    longer than the log's tail the diagnosis reads. It is still the experiment's own line
    that raised it: high confidence, not "an exception line without the traceback above
    it", and the advice names a recursion without end."""
    r, f = failure_of(tmp_path, """
        def depth(node):
            return 1 + max((depth(c) for c in node), default=0)
        a = []
        b = [a]
        a.append(b)
        print("tree depth:", depth(a))
    """)
    assert r.log().startswith("Traceback (most recent call last):"), r.log()[:200]
    assert f["class"] == "code_error", f
    assert f["confidence"] == "high", f
    assert "without the traceback" not in f["confidence_reason"], f
    assert f["code_location"]["file"] == "main.py" and f["code_location"]["line"] == 2, f
    assert "cycle" in f["suggestion"] and "setrecursionlimit" in f["suggestion"], f


def test_data_under_tilde_names_the_sandbox_home_and_the_mount(tmp_path):
    """Code that reads ~/datasets/... (expanduser) gets /tmp/datasets/... in the sandbox,
    whose HOME is /tmp. The verdict says so and names the mount that makes the code find the
    host's ~/datasets unchanged; that mount does make the run complete."""
    code = """
        import os
        import numpy as np
        X = np.load(os.path.expanduser("~/datasets/iris/train.npy"))
        print("n:", len(X))
    """
    r, f = failure_of(tmp_path / "a", code)
    assert f["class"] == "missing_data", f
    assert "HOME is /tmp" in f["summary"] and "~" in f["summary"], f
    assert "-v ~/datasets:/tmp/datasets:ro" in f["suggestion"], f
    assert "put '/tmp/datasets" not in f["suggestion"], f
    data = tmp_path / "host" / "datasets"
    (data / "iris").mkdir(parents=True)
    import numpy as np
    np.save(data / "iris" / "train.npy", np.zeros(4))
    r = run_exp(write_exp(tmp_path / "b", code), tmp_path / "b" / "runs", *PERMISSIVE,
                "-v", f"{data}:/tmp/datasets:ro")
    assert r.rc == 0 and r.result["metrics"]["values"] == {"n": 4}, r.why()


def test_a_handled_traceback_is_not_why_a_run_stopped(tmp_path):
    """logging.exception prints the traceback of an error the code handled and went on after;
    the run ended by the code's own sys.exit(message). The gate saw no uncaught exception, so
    the message is the cause and the traceback only context. A traceback the code printed
    last before it exited is still the cause."""
    r, f = failure_of(tmp_path / "a", """
        import json, logging, sys
        logging.basicConfig(level=logging.INFO)
        log = logging.getLogger("exp")
        try:
            cache = json.load(open("cache/features.json"))
        except FileNotFoundError:
            log.exception("no feature cache yet, computing features from scratch")
        print("acc: 0.41", flush=True)
        sys.exit("acc 0.41 below the 0.5 sanity threshold: the labels are probably shuffled")
    """)
    assert r.result["runtime_gate"]["uncaught"] is None, r.why()
    assert f["class"] == "code_error", f
    assert "sanity threshold" in f["summary"] and "handled" in f["summary"], f
    assert "cache/features.json" not in f["suggestion"], f
    assert any("FileNotFoundError" in e for e in f["evidence"]), f
    r, f = failure_of(tmp_path / "b", """
        import sys, traceback
        try:
            open("data/train.csv")
        except FileNotFoundError:
            traceback.print_exc()
            sys.exit(1)
    """)
    assert f["class"] == "missing_data", f


def test_each_streams_last_words_are_read_whatever_their_order_in_run_log(tmp_path):
    """stdout and stderr are two pipes read in turn: run.log has their lines in the order
    labbox read them. The exit message (stderr) of sys.exit need not be the last line there:
    here an atexit handler prints to stdout after it, as a line printed just before the call
    can be read after it. Both streams' last lines are kept (result.json's last_lines) and
    the verdict quotes the message whatever stands last in run.log (which of the two that is
    depends on when labbox read them)."""
    r, f = failure_of(tmp_path / "a", """
        import atexit, sys
        atexit.register(lambda: print("checkpoint saved to ckpt/last.pt", flush=True))
        print("step 120 loss nan", flush=True)
        sys.exit("loss diverged at step 120: lower the learning rate")
    """)
    assert r.result["last_lines"] == {
        "stdout": "checkpoint saved to ckpt/last.pt",
        "stderr": "loss diverged at step 120: lower the learning rate"}, r.why()
    assert "lower the learning rate" in f["summary"], f
    assert any("lower the learning rate" in e for e in f["evidence"]), f
    # explain, reading the record again, comes to the same
    doc = json.loads(labbox("explain", "--json", "--runs-dir", str(tmp_path / "a" / "runs"),
                            r.result["id"]).stdout)
    assert doc["failure"]["summary"] == f["summary"], doc["failure"]
    # what the streams end with: no newline at the end, blank lines after, a long line cut
    r, f = failure_of(tmp_path / "b", """
        import sys
        sys.stdout.write("x" * 1000 + "\\n\\n   \\n")
        sys.stderr.write("first\\nlast words, unended")
        sys.stderr.flush()
        sys.exit(3)
    """)
    assert r.result["last_lines"] == {"stdout": "x" * 400, "stderr": "last words, unended"}, \
        r.result["last_lines"]
    r = run_exp(write_exp(tmp_path / "c", "print('acc: 0.5')\n"), tmp_path / "c" / "runs")
    assert r.result["last_lines"] == {"stdout": "acc: 0.5", "stderr": None}, r.why()
    # a cut through a UTF-8 character drops the character, not half of it
    r, f = failure_of(tmp_path / "d", """
        import os, sys
        os.write(1, ("a" * 399 + "\\u00e9\\u00e9 tail\\n").encode())
        sys.exit(3)
    """)
    assert r.result["last_lines"]["stdout"] == "a" * 399, r.result["last_lines"]
    assert "\\udc" not in (r.run_dir / "result.json").read_text()
    # the other stream's line is quoted, never read for a class: a note on stdout that
    # names a known cause is not why the program stopped
    r, f = failure_of(tmp_path / "e", """
        import sys, time
        print("note: CUDA out of memory at batch 64 earlier; recovered at batch 32", flush=True)
        time.sleep(0.5)
        sys.exit("validation accuracy 0.12 is below the required 0.50; stopping")
    """)
    assert f["class"] == "code_error", f
    assert "below the required 0.50" in f["summary"] and "recovered at batch 32" in f["summary"], f


@pytest.mark.parametrize("gate", ["on", "off"])
def test_an_exception_the_interpreter_ignored_is_not_why_the_run_ended(tmp_path, gate):
    """Python prints "Exception ignored in atexit callback" (or "in: <obj>" for a finalizer)
    with a traceback for an exception it ignored: an atexit handler's sys.exit(1), a
    __del__'s error. The exit status does not follow it; the run ended by the program's own
    sys.exit(message), and that is what the verdict says."""
    r, f = failure_of(tmp_path / "a", """
        import atexit, sys
        class Tracker:
            def __del__(self):
                raise RuntimeError("tracker flush failed")
        def _cleanup():
            sys.exit(1)
        atexit.register(_cleanup)
        t = Tracker()
        print("epoch 1 acc: 0.61")
        del t
        sys.exit("dataset shard 3 is missing: /data/shard3.npy")
    """, "--runtime-gate", gate)
    assert "Exception ignored in" in r.log(), r.why()
    assert f["class"] == "code_error", f
    assert "dataset shard 3 is missing" in f["summary"], f
    assert "SystemExit" not in f["summary"] and "tracker flush" not in f["summary"], f
    assert f.get("exception") is None and f.get("location") is None, f


def test_a_planted_exception_ignored_line_does_not_hide_the_crash(tmp_path):
    """"Exception ignored in" is anyone's to print: written just above the program's real
    traceback, it would make the crash read as ignored, and an earlier traceback the program
    printed itself decide the class. The gate's record of the uncaught exception is the
    interpreter's word: its traceback is read wherever it stands."""
    r, f = failure_of(tmp_path / "a", """
        import sys
        print("loss: 0.5")
        sys.stderr.write('Traceback (most recent call last):\\n'
                         '  File "/usr/lib/python3/dist-packages/torch/cuda/memory.py", '
                         'line 10, in alloc\\n'
                         'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to '
                         'allocate 2.00 GiB\\n')
        sys.stderr.write("Exception ignored in: <function f at 0x1>\\n")
        sys.stderr.flush()
        d = {}
        x = d["missing_key"]
    """)
    assert r.result["runtime_gate"]["uncaught"]["exception"] == "KeyError", r.why()
    assert f["class"] == "code_error" and f["exception"] == "KeyError", f


def test_a_dead_workers_exception_is_the_failure_not_the_main_processs_wait(tmp_path):
    """A producer thread dies of ValueError and the main loop's queue.get then raises
    queue.Empty; a child process dies of ZeroDivisionError and the parent's recv raises
    EOFError. The failure quotes the worker's exception and its line, and names the main
    one as what came after; the worker_exception warning says it fits a failed run."""
    r, f = failure_of(tmp_path / "t", """
        import queue, threading
        q = queue.Queue()
        def producer():
            for i in range(5):
                if i == 2:
                    raise ValueError("corrupt record at offset 4096 in shard 2")
                q.put(i)
        threading.Thread(target=producer, daemon=True).start()
        total = 0
        while True:
            total += q.get(timeout=2)
    """)
    assert f["exception"] == "ValueError", f
    assert "corrupt record at offset 4096" in f["summary"] and "Empty" in f["summary"], f
    assert f["code_location"]["line"] == 6 and f["code_location"]["function"] == "producer", f
    (w,) = [w for w in r.result["diagnosis_warnings"] if w["kind"] == "worker_exception"]
    assert "failed" in w["message"] and "went on" not in w["message"], w
    r, f = failure_of(tmp_path / "p", """
        import multiprocessing as mp
        def worker(conn):
            data = conn.recv()
            conn.send(sum(data) / len([]))
        if __name__ == "__main__":
            a, b = mp.Pipe()
            p = mp.Process(target=worker, args=(b,))
            p.start()
            b.close()
            a.send([1, 2, 3])
            print("score:", a.recv())
    """)
    assert f["exception"] == "ZeroDivisionError", f
    assert "EOFError" in f["summary"], f
    assert f["code_location"]["function"] == "worker", f


# Scratch shards written to tempfile.mkdtemp(): the sandbox's private /tmp is a tmpfs, and
# numpy's and torch's savers report filling it without ENOSPC's words.
TMP_SHARDS = '''
    import os, sys, tempfile
    import numpy as np
    d = tempfile.mkdtemp()
    for i in range(12):  # 12 x 8 MiB > 64 MiB
        p = os.path.join(d, f"shard{i}")
        if sys.argv[1] == "torch":
            import torch
            torch.save({"w": torch.zeros(2 * 1024 * 1024)}, p + ".pt")
        else:
            np.save(p + ".npy", np.zeros(1024 * 1024))
    print("accuracy: 0.9")
'''


@pytest.mark.parametrize("saver", ["numpy", "torch"])
def test_a_full_private_tmp_is_why_a_saver_failed(tmp_path, saver):
    if importlib.util.find_spec(saver) is None:
        pytest.skip(f"{saver} is not installed")
    exp = write_exp(tmp_path, TMP_SHARDS)
    r = run_exp(exp, tmp_path / "runs", "--tmpfs", "/tmp:size=64m", args=(saver,))
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    assert "private /tmp (a tmpfs of 64m" in f["summary"], f
    assert f["escalation"]["flag"] == "--tmpfs /tmp:size=128m", f
    assert "--tmpfs /tmp:size=128m" in f["suggestion"], f
    # the flag is the remedy
    r = run_exp(exp, tmp_path / "runs", "--tmpfs", "/tmp:size=128m", args=(saver,))
    assert r.rc == 0, r.why()


NUMPY_STRICT = {
    # RBF kernel ridge regression: far pairs underflow to 0, which numpy ignores by default
    "underflow": """
        import numpy as np
        np.seterr(all="raise")
        rng = np.random.default_rng(0)
        X = rng.normal(size=(100, 3)) * 10
        d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        K = np.exp(-d2 / 0.5)
        print(f"train_mse: {float(K.mean()):.6f}")
    """,
    # macro precision from a confusion matrix where a class is never predicted: 0/0
    "zero_by_zero": """
        import numpy as np
        np.seterr(all="raise")
        cm = np.array([[2., 0., 0.], [0., 2., 0.], [0., 2., 0.]])
        print(f"accuracy: {np.trace(cm) / cm.sum():.4f}")
        precision = np.diag(cm) / cm.sum(axis=0)
        print(f"macro_precision: {precision.mean():.4f}")
    """,
    # a logistic regression whose learning rate is far too high: the loss grows, then exp overflows
    "divergence": """
        import numpy as np
        np.seterr(all="raise")
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(float); w = np.zeros(5)
        for step in range(1000):
            z = X @ w
            p = 1 / (1 + np.exp(-z))
            loss = float(np.mean((p - y) ** 2))
            print(f"step {step} loss {loss:.4f}", flush=True)
            w -= 1e6 * (X.T @ (p - y)) * (step + 1)
    """,
}


@pytest.mark.parametrize("case", sorted(NUMPY_STRICT))
def test_a_floating_point_error_is_read_from_numpys_message(tmp_path, case):
    if importlib.util.find_spec("numpy") is None:
        pytest.skip("numpy is not installed")
    r, f = failure_of(tmp_path, NUMPY_STRICT[case])
    assert f["exception"] == "FloatingPointError", r.why()
    # the code's np.seterr is what raised: never advised back to it
    assert "np.seterr(all='raise')" not in f["suggestion"], f
    if case == "divergence":
        assert f["class"] == "nan_divergence", r.why()
        assert "learning rate" in f["suggestion"], f
        return
    assert f["class"] == "code_error", r.why()
    assert "learning rate" not in f["suggestion"], f
    if case == "underflow":
        assert "underflow" in f["summary"], f
        assert "under='ignore'" in f["suggestion"], f
    else:
        assert f["confidence"] == "medium", f
        assert "division by zero" in f["summary"], f
        assert "denominator" in f["suggestion"], f


def test_what_the_sandbox_takes_away_is_not_blamed_on_the_code(tmp_path):
    import os
    env = {**os.environ, "USER": os.environ.get("USER") or "researcher"}
    exp = write_exp(tmp_path, """
        import os
        run_name = f"{os.environ['USER']}_exp1"
        print("acc: 0.9")
    """, name="envuser")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, env=env)
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    assert "clean environment" in f["summary"], f
    assert "-e USER=VALUE" in f["suggestion"], f
    assert f["escalation"] is None, f
    # the flag it names is the remedy
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "-e", "USER=researcher", env=env)
    assert r.rc == 0, r.why()
    exp = write_exp(tmp_path, """
        import os
        user = os.getlogin()
        print("acc: 0.9")
    """, name="getlogin")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE)
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "sandbox_restriction", r.why()
    assert f["confidence"] == "high", f
    assert "controlling terminal" in f["summary"], f
    assert "getpass.getuser()" in f["suggestion"], f


RESUME = """
    # nanoGPT's resume pattern: --resume loads out_dir/ckpt, then saves the next one there
    import argparse, json, os
    p = argparse.ArgumentParser()
    p.add_argument("--out_dir", default="out"); p.add_argument("--resume", action="store_true")
    p.add_argument("--load", default=None)
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    it = 0
    if a.resume:
        with open(a.load or os.path.join(a.out_dir, "ckpt.json")) as f:
            it = json.load(f)["iter_num"]
    with open(os.path.join(a.out_dir, "ckpt.json"), "w") as f:
        json.dump({"iter_num": it + 10}, f)
    print(f"iter_num: {it + 10}")
"""


def test_resuming_from_an_earlier_runs_checkpoint_names_that_run(tmp_path):
    exp = write_exp(tmp_path, RESUME)
    runs = tmp_path / "runs"
    first = run_exp(exp, runs, *PERMISSIVE)
    assert first.rc == 0, first.why()
    ckpt = Path(first.result["run_dir"]) / "exp" / "out" / "ckpt.json"
    assert ckpt.is_file()
    r = run_exp(exp, runs, *PERMISSIVE, args=("--resume",))
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "missing_data", r.why()
    assert first.result["id"] in f["summary"] and str(ckpt) in f["summary"], f
    assert "fresh copy" in f["summary"], f
    assert "inside the experiment directory" not in f["suggestion"], f
    # both ways it offers work: the mount ...
    mount = f"-v {ckpt}:/labbox-prev/out/ckpt.json:ro"
    assert mount in f["suggestion"], f
    r = run_exp(exp, runs, *PERMISSIVE, *mount.split(" ", 1),
                args=("--resume", "--load", "/labbox-prev/out/ckpt.json"))
    assert r.rc == 0 and r.result["metrics"]["values"]["iter_num"] == 20, r.why()
    # ... and the copy into the experiment directory
    assert f"cp {ckpt} {exp.resolve()}/out/ckpt.json" in f["suggestion"], f
    (exp / "out").mkdir()
    (exp / "out" / "ckpt.json").write_text(ckpt.read_text())
    r = run_exp(exp, runs, *PERMISSIVE, args=("--resume",))
    assert r.rc == 0 and r.result["metrics"]["values"]["iter_num"] == 20, r.why()


OWN_MODULE_CASES = {
    # a module of the experiment's own package that is not in the directory
    "package_submodule": ("import mypkg.data\nimport mypkg.models\n",
                          {"mypkg/__init__.py": "", "mypkg/data.py": "X = 1\n"}, "mypkg/models"),
    # a name the experiment's own module does not define
    "own_name": ("from utils import lod_data\n", {"utils.py": "def load_data():\n    return 1\n"},
                 "own module 'utils'"),
    # two of the experiment's modules importing each other
    "circular": ("import a\n", {"a.py": "from b import g\ndef f():\n    return 1\n",
                                "b.py": "from a import f\ndef g():\n    return 2\n"},
                 "circular import"),
    # the experiment's own module, in a subdirectory Python does not search
    "out_of_path": ("import helpers\n", {"src/helpers.py": "X = 1\n"}, "src/helpers.py"),
}


@pytest.mark.parametrize("case", sorted(OWN_MODULE_CASES))
def test_an_import_of_the_experiments_own_modules_is_its_code(tmp_path, case):
    """The experiment's own modules are its code: a missing file of its package, a misspelt
    name of its module, a circular import are code errors, never a package to pip install or
    an environment to rebuild (no escalation, so --escalate env makes no second attempt)."""
    main, files, words = OWN_MODULE_CASES[case]
    r, f = failure_of(tmp_path, main + 'print("accuracy: 0.9")\n', "--escalate", "env",
                      files=files)
    assert f["class"] == "code_error", r.why()
    assert f["escalation"] is None, r.why()
    assert "pip install" not in f["suggestion"], r.why()
    assert words in f["summary"], r.why()
    assert len(r.result.get("attempts", [None])) == 1, r.why()


def test_a_module_an_installed_packages_version_lacks_is_its_version(tmp_path):
    """json imports, so 'json.nosuch' is a module this Python's json lacks: the Python
    version, not a package to pip install by json's name."""
    r, f = failure_of(tmp_path, "import json.labbox_nosuch\n")
    assert f["class"] == "wrong_env", r.why()
    assert "standard library" in f["summary"], r.why()
    assert "pip install" not in f["suggestion"], r.why()
    assert (f["escalation"] or {}).get("environment") != "pip install json", r.why()


def test_a_misspelt_attribute_of_a_library_is_the_codes(tmp_path):
    """np.arrray: Python says "Did you mean: 'array'?", and no numpy has arrray. A typo on
    the experiment's line, not an environment to rebuild (no escalation)."""
    r, f = failure_of(tmp_path, """
        import numpy as np
        x = np.arrray([1, 2, 3])
        print("accuracy:", x.mean())
    """, "--escalate", "env")
    assert f["class"] == "code_error", r.why()
    assert f["confidence"] == "high", r.why()
    assert f["escalation"] is None, r.why()
    assert f["code_location"]["line"] == 2, r.why()
    assert len(r.result["attempts"]) == 1, r.why()


def test_a_file_the_code_made_read_only_is_the_codes_not_the_sandboxs(tmp_path):
    """The code chmods its own checkpoint in exp/ to 0444, then writes it: the experiment's
    directory is the one the sandbox lets the run write, so no -v mount is suggested."""
    r, f = failure_of(tmp_path, """
        import os
        with open("ckpt.txt", "w") as f: f.write("epoch 1")
        os.chmod("ckpt.txt", 0o444)
        with open("ckpt.txt", "w") as f: f.write("epoch 2")
        print("accuracy: 0.9")
    """)
    assert f["class"] == "code_error", r.why()
    assert f["escalation"] is None, r.why()
    assert "-v " not in f["suggestion"] and "0444" in f["summary"], r.why()
    assert f["code_location"]["line"] == 4, r.why()


def test_a_missing_value_in_the_data_is_not_a_divergence(tmp_path):
    """An empty CSV field read as NaN, then int(): nothing trained, so no advice to lower the
    learning rate; the data has a missing value."""
    r, f = failure_of(tmp_path, """
        import numpy as np
        data = np.genfromtxt("data.csv", delimiter=",", skip_header=1)
        labels = [int(v) for v in data[:, 1]]
        print("n_pos:", sum(labels))
    """, files={"data.csv": "id,label,x\n1,0,0.5\n2,,0.7\n3,1,0.9\n"})
    assert f["class"] == "code_error", r.why()
    assert "missing value" in f["summary"], r.why()
    assert "lower the learning rate" not in f["suggestion"], r.why()
    assert f["escalation"] is None, r.why()


# --- open files: the process's own limit, the machine's table -----------------------------------

LEAK = """
    import os, resource
    print("nofile:", resource.getrlimit(resource.RLIMIT_NOFILE))
    os.makedirs("preds", exist_ok=True)
    handles = []
    for i in range(5000):
        f = open(f"preds/sample_{i}.json", "w")  # never closed
        f.write("{}")
        handles.append(f)
    print("n_predictions: 5000")
"""


def _emfile_is_the_codes(r, f):
    assert f["class"] == "code_error", r.why()
    assert "Too many open files" in f["summary"] and "RLIMIT_NOFILE" in f["summary"], r.why()
    assert "sandbox limit" not in f["summary"], r.why()
    assert f["escalation"] is None, r.why()
    assert "--pids-limit" not in f["suggestion"] and "OMP_NUM_THREADS" not in f["suggestion"], r.why()
    assert "with open(" in f["suggestion"] and "ulimit -n" in f["suggestion"], r.why()
    assert 'set_sharing_strategy("file_system")' in f["suggestion"], r.why()


def test_a_file_descriptor_leak_under_the_shells_limit_is_the_codes(tmp_path):
    """labbox lowers no RLIMIT_NOFILE: the sandbox keeps the hard limit of the shell that
    started it (here 256), so files opened and never closed fail there as they would outside.
    That is the code's leak, not a sandbox limit, and --pids-limit (processes) cannot help."""
    import resource
    import subprocess
    from conftest import LABBOX
    exp = write_exp(tmp_path, LEAK)
    p = subprocess.run([LABBOX, "run", "--json", "--python", PYTHON, *PERMISSIVE,
                        "--runs-dir", str(tmp_path / "runs"), str(exp)],
                       capture_output=True, text=True, timeout=180,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    doc = json.loads(p.stdout)
    f = doc["failure"]

    class R:
        def why(self):
            return json.dumps(f, indent=1) + "\n" + p.stderr[-2000:]
    assert p.returncode == 1 and doc["status"] == "failed", R().why()
    assert "nofile: (256, 256)" in Path(doc["run_dir"], "run.log").read_text(), R().why()
    _emfile_is_the_codes(R(), f)
    assert f["confidence"] == "high", R().why()


def test_a_limit_the_code_lowered_itself_is_still_the_codes(tmp_path):
    """The experiment lowers its own RLIMIT_NOFILE (resource.setrlimit) and then leaks: its
    EMFILE is its own, whatever limit labbox was started with."""
    r, f = failure_of(tmp_path, textwrap.dedent("""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
    """) + textwrap.dedent(LEAK))
    _emfile_is_the_codes(r, f)


def test_the_machines_open_file_table_is_neither_the_codes_nor_labboxs(tmp_path):
    """ENFILE ("Too many open files in system") is the kernel's table for the whole machine:
    no limit of the run's, no flag of labbox's."""
    r, f = failure_of(tmp_path, """
        import errno, os
        print("step 1")
        raise OSError(errno.ENFILE, os.strerror(errno.ENFILE), "data/shard_0.bin")
    """)
    assert f["class"] not in ("code_error", "sandbox_restriction"), r.why()
    assert "system-wide" in f["summary"] and "fs.file-max" in f["summary"], r.why()
    assert f["escalation"] is None and "--pids-limit" not in f["suggestion"], r.why()


# --- a NaN: divergence or data, and what the output can tell ------------------------------------

REINFORCE_TORCH = """
    # REINFORCE with an entropy bonus on a 4-armed bandit; no data is read
    import torch
    torch.manual_seed(0)
    true_means = torch.tensor([0.1, 0.5, 0.2, 0.9])
    policy = torch.nn.Linear(1, 4)
    opt = torch.optim.SGD(policy.parameters(), lr=LR)
    x = torch.ones(1, 1)
    for episode in range(300):
        probs = torch.softmax(policy(x), dim=-1)
        a = torch.multinomial(probs, 1).item()
        r = true_means[a] * 100 + torch.randn(()) * 50
        entropy = -(probs * torch.log(probs)).sum()
        obj = -torch.log(probs[0, a]) * r - 0.01 * entropy
        opt.zero_grad(); obj.backward(); opt.step()
        if episode % 20 == 0:
            print(f"episode {episode} reward: {r.item():.2f}")
    print("mean_reward:", r.item())
"""


def _never_rules_out_the_learning_rate(r, f):
    assert "changes nothing" not in f["suggestion"], r.why()
    assert "lower the learning rate" in f["suggestion"], r.why()
    assert "most likely a missing value" not in f["summary"], r.why()


@pytest.mark.skipif(not importlib.util.find_spec("torch"), reason="needs torch")
def test_a_policy_that_diverged_is_not_called_missing_data(tmp_path):
    """lr=50 drives the policy's logits to NaN and torch.multinomial refuses the probabilities;
    the program reads no data and lr=0.05 completes. Episodes were printed before the error:
    a divergence most likely, never "a lower learning rate changes nothing here"."""
    r, f = failure_of(tmp_path, REINFORCE_TORCH.replace("LR", "50.0"))
    assert f["class"] == "nan_divergence", r.why()
    assert "diverged" in f["summary"] and "data" in f["summary"], r.why()
    assert f["confidence"] == "medium", r.why()
    _never_rules_out_the_learning_rate(r, f)
    ok = run_exp(write_exp(tmp_path / "lo", REINFORCE_TORCH.replace("LR", "0.05")),
                 tmp_path / "runs-lo", *PERMISSIVE)
    assert ok.rc == 0 and ok.result["status"] == "completed", ok.why()


def test_numpys_sampler_after_a_divergence_is_not_called_missing_data(tmp_path):
    """The same in numpy: a softmax policy with a learning rate far too high overflows, and
    np.random.choice says "probabilities contain NaN" after rewards were printed."""
    r, f = failure_of(tmp_path, """
        import numpy as np
        rng = np.random.default_rng(0)
        means = np.array([0.1, 0.5, 0.2, 0.9])
        theta = np.zeros(4)
        for episode in range(500):
            probs = np.exp(theta) / np.exp(theta).sum()
            a = np.random.choice(4, p=probs)
            r = means[a] * 100 + rng.normal() * 50
            grad = -probs
            grad[a] += 1.0
            theta += 5000.0 * r * grad
            if episode % 10 == 0:
                print(f"episode {episode} return: {r:.2f}")
    """)
    assert f["class"] == "nan_divergence", r.why()
    assert "probabilities contain NaN" in f["summary"], r.why()
    _never_rules_out_the_learning_rate(r, f)


def test_a_nan_the_output_cannot_place_says_both(tmp_path):
    """Sampling weights read from a file with an empty field: no training step printed, so
    labbox cannot tell the data from a divergence; it says both, and does not rule out the
    learning rate nor call it a divergence."""
    r, f = failure_of(tmp_path, """
        import numpy as np
        w = np.genfromtxt("weights.csv", delimiter=",")
        idx = np.random.choice(len(w), size=10, p=w / w.sum())
        print("picked:", idx)
    """, files={"weights.csv": "0.2,0.3,,0.5\n"})
    assert f["class"] == "code_error", r.why()
    assert "data" in f["summary"] and "diverged" in f["summary"], r.why()
    assert f["confidence"] == "medium", r.why()
    _never_rules_out_the_learning_rate(r, f)


# --- a module or class the file being unpickled names ----------------------------------------

def _pickle_from(tmp_path, module_src, code, out):
    """Run CODE with a temporary module `models` (MODULE_SRC) importable, as the project that
    saved the file had it; the file lands at OUT, and the module stays behind."""
    import subprocess
    saver = tmp_path / "saver"
    saver.mkdir(exist_ok=True)
    (saver / "models.py").write_text(textwrap.dedent(module_src))
    p = subprocess.run([PYTHON, "-c", textwrap.dedent(code), str(out)], cwd=saver,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _has_torch():
    return importlib.util.find_spec("torch") is not None


def _unpickled_module_verdict(r, f, line, call):
    assert f["class"] == "code_error", r.why()
    assert "file being loaded names module 'models'" in f["summary"], r.why()
    assert "not staged" in f["summary"], r.why()
    assert "pip install" not in f["suggestion"], r.why()
    assert "copy the module" in f["suggestion"], r.why()
    assert f["escalation"] is None, r.why()
    assert f["code_location"]["file"] == "main.py", r.why()
    assert f["code_location"]["line"] == line, r.why()
    assert call in f["code_location"]["text"], r.why()


@pytest.mark.parametrize("gate", [("--runtime-gate", "off"), ()], ids=["gate_off", "gate_record"])
def test_a_pickle_naming_the_saving_projects_module_is_no_package(tmp_path, gate):
    """pickle.load of objects whose class lived in the saving project's models.py, not staged
    here: Python says "No module named 'models'" from inside the unpickler. No import of the
    experiment's names it, and `pip install models` installs an unrelated project: the file
    names a module of code that is not with the experiment (code_error, no escalation, one
    attempt under --escalate env). explain, from the record and made again, agrees."""
    exp = write_exp(tmp_path, """
        import pickle
        with open("checkpoint.pkl", "rb") as f:
            model = pickle.load(f)
        print("accuracy:", sum(model.w))
    """)
    _pickle_from(tmp_path, """
        class SmallNet:
            def __init__(self):
                self.w = [0.5, 0.25]
    """, """
        import pickle, sys, models
        pickle.dump(models.SmallNet(), open(sys.argv[1], "wb"))
    """, exp / "checkpoint.pkl")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, *gate, "--escalate", "env")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    _unpickled_module_verdict(r, f, 3, "pickle.load(f)")
    assert len(r.result.get("attempts", [None])) == 1, r.why()

    def explain_json():
        p = labbox("explain", "--json", "--runs-dir", tmp_path / "runs", r.result["id"])
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["failure"]

    g = explain_json()
    for k in ("class", "summary", "suggestion", "confidence", "code_location", "escalation"):
        assert g[k] == f[k], (k, g, f)
    # a record without the newer fields: the diagnosis is made again from run.log
    path = r.run_dir / "result.json"
    doc = json.loads(path.read_text())
    for k in ("confidence", "confidence_reason", "code_location", "escalation", "location",
              "exception"):
        doc["failure"].pop(k, None)
    path.write_text(json.dumps(doc))
    g = explain_json()
    assert "recorded_class" not in g, g
    for k in ("class", "summary", "confidence", "code_location", "escalation"):
        assert g[k] == f[k], (k, g, f)
    assert "pip install" not in g["suggestion"], g


def test_the_default_gate_refuses_a_pickle_naming_a_module_outside_its_allowlist(tmp_path):
    """Under the default gate the same load is refused by the gate's pickle allowlist before
    any import: gate_refused, which is true and stays."""
    exp = write_exp(tmp_path, """
        import pickle
        with open("checkpoint.pkl", "rb") as f:
            model = pickle.load(f)
    """)
    _pickle_from(tmp_path, "class SmallNet:\n    pass\n", """
        import pickle, sys, models
        pickle.dump(models.SmallNet(), open(sys.argv[1], "wb"))
    """, exp / "checkpoint.pkl")
    r = run_exp(exp, tmp_path / "runs")
    assert r.rc == 1, r.why()
    assert r.result["failure"]["class"] == "gate_refused", r.why()


@pytest.mark.skipif(not _has_torch(), reason="needs torch")
def test_torch_load_of_a_whole_model_whose_class_module_is_missing(tmp_path):
    """torch.save(model) pickles the model's class by its module: loaded where models.py is
    not staged, torch's find_class raises; the verdict names the module, code_location is the
    experiment's torch.load line. With a models.py staged that lacks the class, the class is
    named."""
    main = """
        import torch
        net = torch.load("net.pt")
        print("accuracy:", float(net.lin.weight.sum()))
    """
    exp = write_exp(tmp_path, main)
    _pickle_from(tmp_path, """
        import torch
        class SmallNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 2)
    """, """
        import sys, torch, models
        torch.save(models.SmallNet(), sys.argv[1])
    """, exp / "net.pt")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "--runtime-gate", "off")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    _unpickled_module_verdict(r, f, 2, "torch.load(")
    assert "serialization.py" in f["location"]["file"], r.why()
    # the experiment has a models.py of its own, without that class
    (exp / "models.py").write_text("import torch\n\nclass Other(torch.nn.Module):\n    pass\n")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "--runtime-gate", "off")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "code_error", r.why()
    assert "class 'SmallNet'" in f["summary"] and "models.py" in f["summary"], r.why()
    assert "pip install" not in f["suggestion"], r.why()
    assert f["escalation"] is None and f["code_location"]["line"] == 2, r.why()


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is not None, reason="sklearn is installed")
def test_a_pickle_naming_a_package_the_interpreter_lacks_is_that_package(tmp_path):
    """A pickle of a scikit-learn estimator, loaded where sklearn is not installed: the file
    names sklearn.linear_model._base, Python says "No module named 'sklearn'", and that is a
    package to install, by its project's name."""
    exp = write_exp(tmp_path, """
        import pickle
        with open("model.pkl", "rb") as f:
            clf = pickle.load(f)
        print("accuracy:", clf.score([[0]], [0]))
    """)
    # protocol 0: GLOBAL 'sklearn.linear_model._base LinearRegression', then STOP
    (exp / "model.pkl").write_bytes(b"csklearn.linear_model._base\nLinearRegression\n.")
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "--runtime-gate", "off")
    assert r.rc == 1, r.why()
    f = r.result["failure"]
    assert f["class"] == "missing_package", r.why()
    assert "file being loaded names module 'sklearn'" in f["summary"], r.why()
    assert f["escalation"]["environment"] == "pip install scikit-learn", r.why()
    assert f["code_location"]["line"] == 3, r.why()


# An exception the code caught on purpose (a cache miss, an optional import, an allocation too
# big for the exact method) is not why the run failed when the fallback then hits a bug of its
# own: the fallback's error is the verdict, and the handled one is named as not its cause.
FALLBACKS = {
    "cache_miss": ("""
        import numpy as np
        try:
            feats = np.load("cache/features.npy")
        except FileNotFoundError:
            X = np.ones((10, 16))
            W = np.ones((32, 8))
            feats = X @ W
        print("feat_mean:", feats.mean())
    """, "ValueError", 7, "FileNotFoundError"),
    "optional_import": ("""
        import argparse
        args = argparse.ArgumentParser().parse_args([])
        try:
            import labbox_no_such_tracker as tracker
        except ImportError:
            print("no tracker; logging to stdout")
            log_every = args.log_interval
        print("loss: 0.2")
    """, "AttributeError", 7, "ModuleNotFoundError"),
    "library_raise_in_fallback": ("""
        import json
        try:
            cfg = json.load(open("cfg.json"))
        except FileNotFoundError:
            cfg = json.loads("{not json")
        print("lr:", cfg["lr"])
    """, "json.decoder.JSONDecodeError", 5, "FileNotFoundError"),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_a_handled_exception_is_not_the_cause_of_its_fallbacks_bug(tmp_path, case):
    code, exc, line, handled = FALLBACKS[case]
    r, f = failure_of(tmp_path, code)
    assert f["class"] == "code_error", r.why()
    assert f["exception"] == exc, r.why()
    assert f["code_location"]["line"] == line, r.why()
    assert f"handling an earlier {handled}" in f["summary"], r.why()
    assert "not this error's cause" in f["summary"], r.why()
    assert any(e.startswith(handled) for e in f["evidence"]), r.why()


TRANSLATIONS = {
    # `except FileNotFoundError: raise RuntimeError(...)` says the same failure in other words
    "raise": """
        import numpy as np
        def load():
            try:
                return np.load("cache/features.npy")
            except FileNotFoundError:
                raise RuntimeError("could not load the cached features")
        feats = load()
    """,
    # ... through a helper of the experiment's own
    "helper": """
        import numpy as np
        def fail(msg):
            raise RuntimeError(msg)
        def load():
            try:
                return np.load("cache/features.npy")
            except FileNotFoundError:
                fail("could not load the cached features")
        feats = load()
    """,
    # ... or a one-line guard
    "guard": """
        import numpy as np
        strict = True
        def load():
            try:
                return np.load("cache/features.npy")
            except FileNotFoundError:
                if strict: raise RuntimeError("could not load the cached features")
        feats = load()
    """,
}


@pytest.mark.parametrize("case", sorted(TRANSLATIONS))
def test_a_handler_that_raises_in_place_of_what_it_caught_is_explained_by_it(tmp_path, case):
    r, f = failure_of(tmp_path, TRANSLATIONS[case])
    assert f["class"] == "missing_data", r.why()
    assert "cache/features.npy" in f["summary"], r.why()
    assert "handling an earlier" not in f["summary"], r.why()


def test_the_codes_own_alarm_is_a_timer_not_a_crash(tmp_path):
    # signal.alarm as a per-trial time guard, without a handler: SIGALRM ends the process.
    exp = write_exp(tmp_path, """
        import signal, time
        signal.alarm(1)
        print("val_acc: 0.5", flush=True)
        time.sleep(30)
    """)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE)
    assert r.result["status"] == "failed" and r.result["signal"] == 14, r.why()
    f = r.result["failure"]
    assert f["class"] == "code_error", r.why()
    assert "signal.alarm" in f["summary"] and "timer" in f["summary"], r.why()
    assert "native" not in f["suggestion"] and "FAULTHANDLER" not in f["suggestion"], r.why()
    assert "crash" not in f["confidence_reason"], r.why()


# --- thirtieth session, from a red-team pass --------------------------------------------------

def test_a_misspelt_data_path_beside_the_staged_file_is_the_codes(tmp_path):
    """`np.load("data/trian.npy")` with data/train.npy staged: the code's misspelt path ("did
    you mean data/train.npy"), not data to put in or mount. Without a near miss it stays
    missing_data; with two names one letter away it stays missing_data and names both;
    `labbox explain` reads the staged copy and says the same."""
    import numpy as np
    main = """
        import os
        import numpy as np
        X = np.load(os.path.join("data", "NAME"))
        print("n:", len(X))
    """
    def staged(d, *names):
        (d / "exp" / "data").mkdir(parents=True)
        for n in names:
            np.save(d / "exp" / "data" / n, np.zeros((4, 3)))

    staged(tmp_path / "typo", "train.npy")
    r, f = failure_of(tmp_path / "typo", main.replace("NAME", "trian.npy"))
    assert f["class"] == "code_error", r.why()
    assert "did you mean data/train.npy" in f["summary"], f
    assert "data/train.npy" in f["suggestion"] and "-v SRC" not in f["suggestion"], f
    assert f["confidence"] == "medium" and not f.get("escalation"), f
    doc = json.loads(labbox("explain", "--json", "--runs-dir", tmp_path / "typo" / "runs",
                            r.result["id"]).stdout)
    assert doc["failure"]["class"] == "code_error", doc
    assert "did you mean data/train.npy" in doc["failure"]["summary"], doc

    staged(tmp_path / "none", "train.npy")
    r, f = failure_of(tmp_path / "none", main.replace("NAME", "valid.npy"))
    assert f["class"] == "missing_data", r.why()

    staged(tmp_path / "two", "train.npy", "trait.npy")
    r, f = failure_of(tmp_path / "two", main.replace("NAME", "trail.npy"))
    assert f["class"] == "missing_data", r.why()
    assert "2 names one letter from it" in f["summary"], f
    assert "data/train.npy" in f["summary"] and "data/trait.npy" in f["summary"], f


def test_a_growing_part_of_an_improving_objective_is_no_divergence(tmp_path):
    """A VAE's KL term rising from ~0 under annealing while its reconstruction loss falls, and
    PPO's value loss growing with the returns it regresses on, are healthy: no
    loss_divergence. The same parts both exploding, with nothing improving, still are."""
    r, ws = warnings_of(tmp_path / "vae", """
        kl = [0.012, 0.35, 2.1, 5.8, 8.4]
        rec = [180.2, 140.1, 121.5, 110.3, 104.9]
        for ep in range(5):
            print(f"Epoch {ep+1}/5 | recon_loss: {rec[ep]:.2f} | kl_loss: {kl[ep]:.3f} | beta: {ep/4:.2f}")
        print(f"test_elbo: {-(rec[-1]+kl[-1]):.2f}")
    """)
    assert not kinds(ws, "loss_divergence"), ws
    r, ws = warnings_of(tmp_path / "ppo", """
        rets = [9.5, 22.0, 80.3, 190.2, 410.7]
        for i, r in enumerate(rets):
            print(f"update {i+1}: episodic_return: {r}, value_loss: {0.05*r*r/10:.4f}, "
                  f"policy_loss: {-0.01+0.002*i:.4f}, entropy: {0.69-0.05*i:.3f}")
        print(f"final_return: {rets[-1]}")
    """)
    assert not kinds(ws, "loss_divergence"), ws
    r, ws = warnings_of(tmp_path / "bad", """
        rec = [3.2, 4.1, 40.0, 900.0]
        kl = [0.01, 0.02, 0.5, 8.0]
        for ep in range(4):
            print(f"Epoch {ep+1} | recon_loss: {rec[ep]} | kl_loss: {kl[ep]}")
        print("test_recon: 900.0")
    """)
    assert "recon_loss" in [w["metric"] for w in kinds(ws, "loss_divergence")], ws


def test_an_overflow_after_a_diverged_loss_is_the_divergence(tmp_path):
    """The printed loss goes 3.2 -> 900, then `math.exp(val_loss)` for the perplexity raises
    OverflowError: the divergence (the overflow is its symptom), as a NaN error after a NaN
    loss is; so is a float power of a weight that blew up. An overflow with no diverged loss
    printed before it stays the code's."""
    r, f = failure_of(tmp_path / "ppl", """
        import math
        for it, l in enumerate([3.2, 4.1, 40.0, 900.0]):
            print(f"iter {it*100}: train loss {l:.4f}")
        val_loss = 812.3
        print(f"val_loss: {val_loss}")
        print(f"val_ppl: {math.exp(val_loss):.2f}")
    """)
    assert f["class"] == "nan_divergence", r.why()
    assert f["confidence"] == "medium" and "learning rate" in f["suggestion"], f
    assert "loss rose from 3.2 to 900" in f["summary"], f
    doc = json.loads(labbox("explain", "--json", "--runs-dir", tmp_path / "ppl" / "runs",
                            r.result["id"]).stdout)
    assert doc["failure"]["class"] == "nan_divergence", doc
    r, f = failure_of(tmp_path / "pow", """
        w = 9.0
        for step in range(6):
            loss = w ** 4
            print(f"step {step} loss: {loss:.4g}")
            w = loss * 1e10
    """)
    assert f["class"] == "nan_divergence", r.why()
    assert "Numerical result out of range" in " ".join(f["evidence"]), f
    r, f = failure_of(tmp_path / "plain", """
        import math
        for step in range(3):
            print(f"step {step} loss: {2.0 / (step + 1):.3f}")
        print(math.exp(1000))
    """)
    assert f["class"] == "code_error", r.why()
