"""Failures named by their cause and the warnings a researcher wants (issue 9 §4), through the
real binary with small real experiments: what labbox says in result.json's `failure` and
`diagnosis_warnings`."""
import importlib.util

import pytest

from conftest import run_exp, write_exp

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
