"""What the code needs, and the root cause of every run: `needs` in `check --json` and
result.json, the failure's confidence, its two frames and its escalation flag, and
`labbox explain` on runs recorded now and on runs recorded before these fields existed.
Real experiments through the real binary."""
import json
import shutil
from pathlib import Path

import pytest

from conftest import host_can_enforce, labbox, run_exp, write_exp

PERMISSIVE = ("--policy", "permissive")


def failed(tmp_path, main_py, *opts, rc=1, files=None):
    exp = write_exp(tmp_path, main_py, files=files)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, *opts)
    assert r.rc == rc, r.why()
    f = r.result["failure"]
    assert f and f["confidence"] in ("high", "medium", "low"), r.why()
    assert f["confidence_reason"], r.why()
    return r, f


def explain(tmp_path, run_id, *opts):
    p = labbox("explain", "--json", "--runs-dir", tmp_path / "runs", *opts, run_id)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "labbox.explain/1"
    return doc


def explain_text(tmp_path, run_id):
    p = labbox("explain", "--runs-dir", tmp_path / "runs", run_id)
    assert p.returncode == 0, p.stderr
    return p.stdout


# --- failure classes: class, evidence, suggestion, confidence, escalation ----------------------

def test_code_error_in_a_library_names_the_experiments_own_frame(tmp_path):
    r, f = failed(tmp_path, """
        import numpy as np

        def invert(m):
            return np.linalg.inv(m)

        invert(np.zeros((2, 3)))
    """)
    assert f["class"] == "code_error"
    assert f["exception"].endswith("LinAlgError")
    # the frame that raised is numpy's, the one to change is the experiment's
    assert "numpy" in f["location"]["file"], f
    assert f["code_location"] == {"file": "main.py", "line": 4, "function": "invert",
                                  "text": "return np.linalg.inv(m)"}
    assert f["confidence"] == "medium"
    assert any("return np.linalg.inv(m)" in e for e in f["evidence"])
    assert "main.py line 4, in invert" in f["summary"]
    assert f["escalation"] is None
    text = explain_text(tmp_path, r.result["id"])
    assert "in the code main.py line 4, in invert: return np.linalg.inv(m)" in text
    assert "raised at" in text and "numpy" in text


def test_code_error_on_the_experiments_line_is_certain(tmp_path):
    r, f = failed(tmp_path, """
        total, count = 3.0, 0
        print("mean:", total / count)
    """)
    assert f["class"] == "code_error" and f["exception"] == "ZeroDivisionError"
    assert f["confidence"] == "high"
    assert f["code_location"]["file"] == "main.py" and f["code_location"]["line"] == 2
    assert f["location"]["file"].endswith("/exp/main.py")


def test_network_names_network_host(tmp_path):
    r, f = failed(tmp_path, """
        import urllib.request
        urllib.request.urlopen("http://example.com/data.csv", timeout=5)
    """)
    # the sandbox refuses the socket (seccomp) or there is no route: either way the network
    assert f["class"] in ("network", "sandbox_restriction"), r.why()
    assert f["escalation"]["flag"] == "--network host", f
    assert f["escalation"]["grants"] == "network" and f["escalation"]["granted"] is False
    assert "--network host" in f["suggestion"]
    assert f["confidence"] == "high"
    # the check saw it coming, and said which flag grants it
    need = [n for n in r.result["needs"] if n["kind"] == "network"]
    assert need and need[0]["flag"] == "--network host" and need[0]["granted"] is False
    assert need[0]["evidence"] == {"file": "main.py", "line": 2,
                                   "text": 'urllib.request.urlopen("http://example.com/data.csv", timeout=5)'}
    assert need[0]["finding"] is None  # permissive: nothing rejects
    doc = explain(tmp_path, r.result["id"])
    assert doc["failure"]["escalation"]["flag"] == "--network host"
    assert doc["needs"] == r.result["needs"]


def test_hub_unreachable_is_network(tmp_path):
    # what huggingface_hub raises offline, from a download helper of the experiment's own
    r, f = failed(tmp_path, """
        import fetch
        fetch.model("bert-base-uncased")
    """, files={"fetch.py": "class LocalEntryNotFoundError(Exception):\n    pass\n"
                            "def model(name):\n"
                            "    raise LocalEntryNotFoundError(\n"
                            "        \"Couldn't reach huggingface.co: offline mode is enabled\")\n"})
    assert f["class"] == "network"
    assert f["escalation"]["flag"] == "--network host"
    assert f["code_location"]["file"] == "fetch.py"


NO_DRIVER = """
    def to_device():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you "
                           "have an NVIDIA GPU and installed a driver")
    to_device()
"""


@pytest.mark.xdist_group("host_gpu_nodes")  # not beside test_gpus.py's stand-in device nodes
def test_gpu_unavailable_names_gpus_all(tmp_path):
    """A CUDA error on a machine with NVIDIA GPUs is lifted by --gpus; on one without any,
    --gpus has nothing to give (labbox refuses it there), so the verdict says to run it
    where there is one, offers no escalation, and explain, from the manifest, agrees.
    (test_gpus.py has the machine with GPUs, with stand-in device nodes.)"""
    if any(Path("/dev").glob("nvidia[0-9]*")):
        pytest.skip("this host has NVIDIA GPUs: the machine without any is not here")
    r, f = failed(tmp_path, NO_DRIVER)
    assert f["class"] == "gpu_unavailable"
    assert any("Found no NVIDIA driver" in e for e in f["evidence"])
    assert "has no NVIDIA GPU" in f["summary"], f
    assert f["escalation"] is None, f
    assert "--gpus all" not in f["suggestion"] and "--mode ssh" in f["suggestion"], f
    assert r.file_json("manifest.json")["machine"]["gpu_device_nodes"] == 0
    doc = explain(tmp_path, r.result["id"])
    assert doc["failure"]["summary"] == f["summary"] and doc["failure"]["escalation"] is None


def test_write_outside_names_the_mount(tmp_path):
    r, f = failed(tmp_path, """
        with open("/usr/share/labbox-explain-results.csv", "w") as fh:
            fh.write("a,b\\n")
    """)
    assert f["class"] == "sandbox_restriction", r.why()
    assert f["escalation"]["flag"] == "-v SRC:/usr/share:rw", f
    assert "-v SRC:/usr/share:rw" in f["suggestion"]
    # the check named the same mount before the run
    need = [n for n in r.result["needs"] if n["kind"] == "write_outside"]
    assert need and need[0]["flag"] == f["escalation"]["flag"]
    assert need[0]["path"] == "/usr/share" and need[0]["via"] == "builtins.open"
    assert need[0]["finding"] is None  # permissive; under standard LB110 rejects it
    p = labbox("check", "--json", r.exp)
    assert json.loads(p.stdout)["needs"][0]["finding"] == "LB110"


def test_read_only_file_system_names_the_directory(tmp_path):
    r, f = failed(tmp_path, """
        import os
        path = os.path.join("/usr", "lib", "labbox-explain.json")
        open(path, "w").write("{}")
    """)
    assert f["class"] == "sandbox_restriction", r.why()
    assert f["escalation"]["grants"] == "write"
    assert f["escalation"]["flag"] == "-v SRC:/usr/lib:rw", f
    assert any("Read-only file system" in e or "Permission denied" in e for e in f["evidence"])


def test_missing_package_names_environment(tmp_path):
    r, f = failed(tmp_path, """
        import sklearn_labbox_missing_pkg
    """)
    assert f["class"] == "missing_package"
    assert f["escalation"]["flag"] == "--python VENV/bin/python"
    assert f["escalation"]["environment"] == "pip install sklearn_labbox_missing_pkg"
    assert f["confidence"] == "high"
    assert f["code_location"]["text"] == "import sklearn_labbox_missing_pkg"


def test_wrong_env_names_environment(tmp_path):
    r, f = failed(tmp_path, """
        from numpy import labbox_function_that_numpy_lacks
    """)
    assert f["class"] == "wrong_env", r.why()
    assert f["escalation"]["grants"] == "environment"
    assert "--python" in f["suggestion"]


def test_oom_names_a_larger_memory(tmp_path):
    if not host_can_enforce("memory"):
        pytest.skip("host has no writable memory cgroup for --memory")
    r, f = failed(tmp_path, """
        blocks = []
        for i in range(64):
            blocks.append(b"\\x01" * (64 * 1024 * 1024))
    """, "--memory", "256m", rc=137)
    assert f["class"] == "oom"
    assert f["confidence"] == "high"
    assert f["escalation"]["flag"] == "--memory 512m", f
    assert f["escalation"]["grants"] == "memory"


def test_oom_without_a_limit_is_the_machines(tmp_path):
    """No --memory: an out-of-memory error is an oom that no flag of labbox's lifts. The
    advice was to raise --memory, and the escalation granted memory. (A 64 TiB allocation,
    this test's first case, is now the code's: test_an_allocation_past_the_machines_memory.)"""
    r, f = failed(tmp_path, """
        raise MemoryError()
    """, rc=1)
    assert f["class"] == "oom", f
    assert f["escalation"] is None, f
    assert "no memory limit" in f["suggestion"] and "--memory" not in f["suggestion"], f


def test_an_allocation_past_the_machines_memory_is_the_codes(tmp_path):
    """numpy refuses 64 TiB: more than the machine has, with or without a limit, so no
    --memory gives it and the shape is the code's (no escalation). explain, which reads the
    machine's memory from the manifest, says the same."""
    # An ordinary user without a memory cgroup accepts the per-process limit, as labbox asks.
    degraded = () if host_can_enforce("memory") else ("--allow-degraded", "memory")
    for opts in ((), ("--memory", "256m", *degraded)):
        r, f = failed(tmp_path, """
            import numpy as np
            a = np.empty(1 << 46, dtype=np.uint8)
        """, *opts, rc=1)
        assert f["class"] == "code_error", f
        assert "more than this machine's memory" in f["summary"], f
        assert f["escalation"] is None, f
        assert "--memory" not in f["suggestion"], f
        doc = explain(tmp_path, r.result["id"])
        assert doc["failure"]["class"] == "code_error", doc["failure"]


def test_a_completed_run_whose_subprocess_the_oom_killer_took_is_not_an_oom(tmp_path):
    """The memory limit killed a child; the main process went on and exited 0. The run was
    not ended by the memory limit: no oom failure, no --memory escalation, a warning."""
    if not host_can_enforce("memory"):
        pytest.skip("host has no writable memory cgroup for --memory")
    exp = write_exp(tmp_path, """
        import subprocess, sys
        hog = "b = [bytearray(64 << 20) for _ in range(64)]"
        r = subprocess.run([sys.executable, "-c", hog])
        print("child_returncode:", r.returncode)
        print("accuracy: 0.91")
    """)
    r = run_exp(exp, tmp_path / "runs", *PERMISSIVE, "--memory", "256m", "--escalate", "memory")
    assert r.rc == 0, r.why()
    res = r.result
    assert res["status"] == "completed" and res["exit_code"] == 0, r.why()
    assert res["metrics"]["values"] == {"child_returncode": -9, "accuracy": 0.91}
    assert res["oom_killed"] is True
    assert res["failure"] is None, res["failure"]
    assert len(res["attempts"]) == 1
    assert [w["kind"] for w in res["diagnosis_warnings"]] == ["oom_kill"]
    doc = explain(tmp_path, res["id"])
    assert doc["failure"] is None, doc["failure"]


UNSUFFIXED = [
    ("""
        import subprocess, sys
        subprocess.run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.3)
    """, "subprocess.TimeoutExpired"),
    ("""
        import queue
        queue.Queue().get(timeout=0.1)
    """, "_queue.Empty"),
]


@pytest.mark.parametrize("main_py,exception", UNSUFFIXED, ids=[u[1] for u in UNSUFFIXED])
def test_an_exception_named_without_error_is_still_the_traceback_s(tmp_path, main_py, exception):
    """A traceback ending in a class whose name has no Error/Exception suffix is read: the
    run was not an exit "without a Python traceback", and its own timeout is not the budget."""
    r, f = failed(tmp_path, main_py)
    assert f["class"] == "code_error", f
    assert f["exception"] == exception, f
    assert exception in f["summary"] and "without a Python traceback" not in f["summary"], f
    assert f["code_location"]["file"] == "main.py" and f["code_location"]["line"] == 2, f
    assert r.result["timed_out"] is False


def test_timeout_is_certain_and_not_an_escalation(tmp_path):
    r, f = failed(tmp_path, """
        import time
        print("working", flush=True)
        time.sleep(30)
    """, "--budget", "1", "--grace", "1", rc=124)
    assert f["class"] == "timeout" and f["confidence"] == "high"
    assert f["escalation"] is None
    assert "--budget" in f["suggestion"]


def test_a_timeout_says_where_the_main_program_was(tmp_path):
    """The budget's SIGTERM used to end a program that never set a handler without a word:
    the timeout could not say what it waited on. The main program prints its threads' stacks
    as it ends, and the verdict names its innermost frame in the experiment's code, beside the
    library frame it was waiting in. Its forked workers print nothing, so the one dump is
    whole; what it printed on stdout before is still its metrics."""
    r, f = failed(tmp_path, """
        import multiprocessing as mp, time

        def work(i):
            time.sleep(100)
            return i

        def gather():
            with mp.get_context("fork").Pool(2) as pool:
                return pool.map(work, range(4))

        if __name__ == "__main__":
            print("loss: 0.5", flush=True)
            gather()
    """, "--budget", "4", "--grace", "2", rc=124)
    assert f["class"] == "timeout", f
    loc = f["code_location"]
    assert (loc["file"], loc["line"], loc["function"]) == ("main.py", 9, "gather"), f
    assert "main.py line 9, in gather" in f["summary"], f
    assert "inside threading.py" in f["summary"], f
    assert f["evidence"][0] == "loss: 0.5", f
    assert any(e.endswith('main.py", line 9 in gather') for e in f["evidence"]), f
    log = r.log()
    assert log.count("Current thread 0x") == 1, log  # the workers printed no stacks
    assert r.result["metrics"]["values"] == {"loss": 0.5}, r.why()
    # explain, reading the record again, says the same
    doc = explain(tmp_path, r.result["id"])
    assert doc["failure"]["code_location"] == loc, doc["failure"]


def test_a_thread_that_kept_a_finished_program_alive_is_named(tmp_path):
    """The main program printed its result and ended, but a thread it started (not a
    daemon) never did, so the process lived until the budget. The verdict says the main
    program had finished and names the thread's line, and the advice is to stop or daemonize
    the thread, not only a larger budget."""
    r, f = failed(tmp_path, """
        import threading, time

        def prefetch():
            while True:
                time.sleep(0.2)

        threading.Thread(target=prefetch).start()
        print("accuracy: 0.9", flush=True)
    """, "--budget", "4", "--grace", "2", rc=124)
    assert f["class"] == "timeout", f
    assert "main program had finished and was waiting for a thread" in f["summary"], f
    loc = f["code_location"]
    assert (loc["file"], loc["line"], loc["function"]) == ("main.py", 5, "prefetch"), f
    assert "daemon=True" in f["suggestion"], f
    assert f["evidence"][0] == "accuracy: 0.9", f
    assert r.result["metrics"]["values"] == {"accuracy": 0.9}, r.why()


def test_the_stacks_never_write_into_a_file_that_took_fd_2(tmp_path):
    """Code that closes fd 2 (to silence a library) and then opens results.json gets fd 2
    for the file; stacks printed to fd 2 as the budget ended it went into results.json and
    its partial results were lost. They go to a copy of stderr the gate took at start."""
    r, f = failed(tmp_path, """
        import os, json, time
        os.close(2)
        res = open("results.json", "w")
        for epoch in range(100):
            res.seek(0); res.truncate()
            res.write(json.dumps({"epoch": epoch, "accuracy": 0.5})); res.flush()
            print("epoch", epoch, flush=True)
            time.sleep(0.3)
    """, "--budget", "4", "--grace", "2", rc=124)
    doc = json.loads((r.run_dir / "exp" / "results.json").read_text())
    assert doc["accuracy"] == 0.5, doc
    assert r.result["metric_issues"] == [], r.why()
    assert f["code_location"]["line"] == 8, f
    assert "Current thread 0x" in r.log()


def test_a_finished_program_waiting_on_its_child_process_is_named(tmp_path):
    """multiprocessing joins a child that is not a daemon at exit: a main program that
    finished with its logger child still waiting on a queue hangs there. The verdict says
    so (the child's own stack is not printed), not only to raise the budget."""
    r, f = failed(tmp_path, """
        import multiprocessing as mp

        def logger(q):
            while q.get() is not None:
                pass

        if __name__ == "__main__":
            q = mp.Queue()
            mp.Process(target=logger, args=(q,)).start()
            q.put("epoch 1")
            print("accuracy: 0.93", flush=True)
    """, "--budget", "4", "--grace", "2", rc=124)
    assert "waiting, at exit, for a child process it started" in f["summary"], f
    assert "daemon=True" in f["suggestion"] and "sentinel" in f["suggestion"], f
    assert r.result["metrics"]["values"] == {"accuracy": 0.93}, r.why()


def test_several_threads_at_exit_are_listed_not_one_blamed(tmp_path):
    """The stacks do not say which threads are daemons: with a daemon heartbeat beside the
    thread that kept the program alive, neither is named alone; both lines are listed."""
    r, f = failed(tmp_path, """
        import queue, threading, time

        q = queue.Queue()

        def writer():
            while True:
                item = q.get()
                if item is None:
                    return

        def heartbeat():
            while True:
                time.sleep(0.2)

        threading.Thread(target=writer).start()
        threading.Thread(target=heartbeat, daemon=True).start()
        q.put(1)
        print("loss: 0.25", flush=True)
    """, "--budget", "4", "--grace", "2", rc=124)
    assert "2 threads were running" in f["summary"], f
    assert "main.py line 7, in writer" in f["summary"], f
    assert "main.py line 13, in heartbeat" in f["summary"], f
    assert f["code_location"] is None, f


def test_stacks_the_program_printed_itself_are_not_where_it_ended(tmp_path):
    """A hang watchdog of the program's own (faulthandler.dump_traceback_later) printed its
    stacks earlier, and its own SIGTERM handler ended it cleanly: those stacks are not where
    it was when the budget ended it, and the verdict names none."""
    r, f = failed(tmp_path, """
        import faulthandler, signal, sys, time

        stop = []
        signal.signal(signal.SIGTERM, lambda s, fr: stop.append(1))

        def load_data():
            time.sleep(1.5)

        faulthandler.dump_traceback_later(1, exit=False)
        load_data()
        print("data loaded", flush=True)
        step = 0
        while not stop:
            step += 1
            time.sleep(0.05)
        print("stopped at step", step, flush=True)
        sys.exit(3)
    """, "--budget", "4", "--grace", "3", rc=124)
    assert "Thread 0x" in r.log()  # the program's own dump is there
    assert f["code_location"] is None and "main program was" not in f["summary"], f


def test_a_prompt_without_a_newline_is_still_the_last_output(tmp_path):
    """A prompt printed without a newline: the stacks' first line is glued to it. The
    prompt is still the run's last words: a wait for a reader, which no budget ends."""
    r, f = failed(tmp_path, """
        import sys, time
        print("loss: 0.5")
        sys.stdout.write("Overwrite the checkpoint? [y/N] ")
        sys.stdout.flush()
        time.sleep(60)
    """, "--budget", "3", "--grace", "2", rc=124)
    assert f["class"] == "code_error" and "keyboard input" in f["summary"], f
    assert "Overwrite the checkpoint? [y/N]" in f["summary"], f
    assert "Current thread" not in f["summary"], f


def test_a_program_with_its_own_sigterm_handler_keeps_it(tmp_path):
    """A time guard of the experiment's (its SIGTERM handler saving partial results) runs as
    it did: no stacks are printed over it, and signal.getsignal saw the default before."""
    r, f = failed(tmp_path, """
        import signal, sys, time
        print("default:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
        def guard(sig, frame):
            print("saved partial", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, guard)
        time.sleep(60)
    """, "--budget", "3", "--grace", "5", rc=124)
    log = r.log()
    assert "default: True" in log and "saved partial" in log, log
    assert "most recent call first" not in log, log
    assert f["class"] == "timeout" and f["code_location"] is None, f


# --- ambiguous endings: what confidence means ---------------------------------------------------

def test_a_quiet_exit_is_a_low_confidence_guess(tmp_path):
    r, f = failed(tmp_path, """
        import sys
        sys.exit(3)
    """, rc=1)
    assert f["class"] == "code_error"
    assert f["confidence"] == "low"
    assert "exit status" in f["confidence_reason"]
    assert f["code_location"] is None


def test_sigkill_no_oom_killer_sent_is_not_called_oom(tmp_path):
    """SIGKILL that no OOM killer sent (here the experiment's own) is not called an
    out-of-memory kill where the run's memory cgroup counts OOM kills: the kernel counts every
    OOM killer's kills there, the host's included, limit or none. Without such a cgroup (an
    ordinary user on cgroup v1) only the exit status is left: a low-confidence oom."""
    r, f = failed(tmp_path, """
        import os, signal
        print("step 1", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """, rc=1)
    assert r.result["signal"] == 9 and r.result["oom_killed"] is False, r.why()
    if r.result["resources"]["peak_memory_source"].startswith("cgroup"):
        assert r.result["oom_counted"] is True, r.why()
        assert f["class"] == "code_error", f
        assert "not by the out-of-memory killer" in f["summary"], f
        assert f["confidence"] == "medium", f
        assert "counted no out-of-memory kill" in f["confidence_reason"], f
        assert f["escalation"] is None, f  # more memory is not offered: it would not help
    else:
        assert r.result["oom_counted"] is False, r.why()
        assert f["class"] == "oom" and f["confidence"] == "low", f
    # explain, reading the record again, comes to the same
    doc = explain(tmp_path, r.result["id"])
    assert doc["failure"]["class"] == f["class"], doc["failure"]
    assert doc["failure"]["confidence"] == f["confidence"], doc["failure"]


def test_a_cpu_time_limit_the_experiment_set_is_not_the_budget(tmp_path):
    """SIGXCPU comes from a CPU-time limit, which labbox never sets (its budget is wall-clock
    time): one the experiment set itself is the code's, and the advice is that limit, not a
    larger --budget. explain says the same."""
    r, f = failed(tmp_path, """
        import resource
        print("loss: 0.3", flush=True)
        resource.setrlimit(resource.RLIMIT_CPU, (1, 2))
        x = 0
        while True:
            x += 1
    """, "--budget", "60", rc=1)
    assert r.result["signal"] == 24 and r.result["timed_out"] is False, r.why()
    assert f["class"] == "code_error", f
    assert "SIGXCPU" in f["summary"] and "RLIMIT_CPU" in f["summary"], f
    assert "setrlimit" in f["suggestion"] and "raise the time budget" not in f["suggestion"], f
    assert f["confidence"] == "medium" and f["escalation"] is None, f
    doc = explain(tmp_path, r.result["id"])
    assert doc["failure"]["class"] == "code_error", doc["failure"]
    text = explain_text(tmp_path, r.result["id"])
    assert "class       code_error" in text and "setrlimit" in text, text
    assert "timeout" not in text, text


def test_a_handled_exception_taken_as_the_cause_is_medium(tmp_path):
    r, f = failed(tmp_path, """
        try:
            import labbox_missing_backend
        except ImportError:
            raise SystemError("no backend available")
    """)
    assert f["class"] == "missing_package", f
    assert f["confidence"] == "medium"
    assert any("labbox_missing_backend" in e for e in f["evidence"])


def test_message_without_traceback_is_medium(tmp_path):
    r, f = failed(tmp_path, """
        import socket, sys
        print("fetching weights", flush=True)
        try:
            socket.getaddrinfo("example.com", 443)
        except OSError:
            pass
        print("curl: (6) Could not resolve host: example.com", file=sys.stderr)
        sys.exit(6)
    """)
    assert f["class"] == "network"
    assert f["confidence"] == "medium"
    assert f["escalation"]["flag"] == "--network host"


def test_a_network_message_with_no_attempt_seen_is_low(tmp_path):
    # The same words with no lookup or socket at all: the gate's whole record has none.
    r, f = failed(tmp_path, """
        import sys
        print("curl: (6) Could not resolve host: example.com", file=sys.stderr)
        sys.exit(6)
    """)
    assert f["class"] == "network"
    assert f["confidence"] == "low", f
    assert "recorded none" in f["confidence_reason"], f


def test_granted_network_is_said(tmp_path):
    r, f = failed(tmp_path, """
        raise ConnectionRefusedError(111, "Connection refused")
    """, "--network", "host")
    assert f["class"] == "network"
    assert f["escalation"]["granted"] is True
    assert "had this already" in f["escalation"]["note"]


# --- needs: seen before the run -----------------------------------------------------------------

DOWNLOADS = """
    from transformers import AutoModel
    import datasets
    import torch

    model = AutoModel.from_pretrained("bert-base-uncased")
    local = AutoModel.from_pretrained("./checkpoint")
    data = datasets.load_dataset("imdb")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.zeros(3).to("cuda")
    print("accuracy: 1")
"""


def test_check_reports_needs_without_rejecting_downloads(tmp_path):
    exp = write_exp(tmp_path, DOWNLOADS)
    for policy in ("standard", "strict"):
        p = labbox("check", "--json", "--policy", policy, exp)
        doc = json.loads(p.stdout)
        got = [(n["kind"], n["evidence"]["line"], n["flag"], n["optional"]) for n in doc["needs"]]
        assert got == [("network", 5, "--network host", False),
                       ("network", 7, "--network host", False),
                       ("gpu", 8, "--gpus all", True),
                       ("gpu", 9, "--gpus all", False)], doc["needs"]
        assert all(n["granted"] is False and n["finding"] is None for n in doc["needs"])
        assert not any(f["id"] == "LB105" for f in doc["findings"])
    assert doc["needs"][0]["via"] == "transformers.AutoModel.from_pretrained"
    assert doc["needs"][0]["evidence"]["text"] == 'model = AutoModel.from_pretrained("bert-base-uncased")'


def test_check_network_rule_still_rejects_requests(tmp_path):
    exp = write_exp(tmp_path, """
        import requests
        r = requests.get("https://example.com/data.csv")
        print("accuracy: 1")
    """)
    p = labbox("check", "--json", exp)
    assert p.returncode == 3
    doc = json.loads(p.stdout)
    assert doc["needs"] == [{"kind": "network",
                             "evidence": {"file": "main.py", "line": 2,
                                          "text": 'r = requests.get("https://example.com/data.csv")'},
                             "via": "requests.get", "flag": "--network host",
                             "optional": False, "finding": "LB105", "granted": False}]


def test_run_records_needs_and_what_was_granted(tmp_path):
    exp = write_exp(tmp_path, """
        import json
        try:
            import datasets
            datasets.load_dataset("imdb")
        except ImportError:
            pass
        print("accuracy: 1")
    """)
    plain = run_exp(exp, tmp_path / "runs")
    assert plain.rc == 0, plain.why()
    assert [(n["kind"], n["granted"]) for n in plain.result["needs"]] == [("network", False)]
    granted = run_exp(exp, tmp_path / "runs", "--network", "host")
    assert granted.rc == 0, granted.why()
    assert [(n["kind"], n["granted"]) for n in granted.result["needs"]] == [("network", True)]
    # a rejected run says what it needs too
    bad = write_exp(tmp_path, "import subprocess\nimport datasets\n"
                              "datasets.load_dataset('imdb')\nsubprocess.run(['id'])\n", name="bad")
    rej = run_exp(bad, tmp_path / "runs")
    assert rej.rc == 3, rej.why()
    assert [n["kind"] for n in rej.result["needs"]] == ["network"]
    text = explain_text(tmp_path, granted.result["id"])
    assert "nothing failed" in text and "--network host (granted)" in text


# --- explain on runs recorded before ------------------------------------------------------------

NEW_FIELDS = ("confidence", "confidence_reason", "code_location", "escalation", "location",
              "exception")


def strip_new_fields(run_dir):
    path = run_dir / "result.json"
    doc = json.loads(path.read_text())
    for k in NEW_FIELDS:
        doc["failure"].pop(k, None)
    doc.pop("needs", None)
    path.write_text(json.dumps(doc, indent=2))
    return doc


def test_explain_a_run_recorded_before(tmp_path):
    r, f = failed(tmp_path, """
        import numpy as np

        def invert(m):
            return np.linalg.inv(m)

        invert(np.zeros((2, 3)))
    """)
    old = strip_new_fields(r.run_dir)
    doc = explain(tmp_path, r.result["id"])
    g = doc["failure"]
    assert "run.log" in doc["diagnosis_source"]
    assert g["class"] == old["failure"]["class"] == "code_error"
    assert g["summary"] == old["failure"]["summary"]
    assert g["evidence"] == old["failure"]["evidence"]
    assert g["confidence"] == f["confidence"] == "medium"
    assert g["code_location"] == f["code_location"]
    assert g["location"] == f["location"]
    assert doc["needs"] is None  # not recorded, not "needs nothing"
    text = explain_text(tmp_path, r.result["id"])
    assert "in the code main.py line 4, in invert" in text
    assert "needs       not recorded" in text
    # the run directory itself works as well, moved out of the index's reach
    moved = tmp_path / "elsewhere" / r.run_dir.name
    shutil.copytree(r.run_dir, moved)
    p = labbox("explain", "--json", moved)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["failure"]["code_location"]["file"] == "main.py"


def test_explain_a_recorded_class_this_labbox_reads_differently(tmp_path):
    r, f = failed(tmp_path, """
        import labbox_missing_pkg_for_explain
    """)
    path = r.run_dir / "result.json"
    doc = json.loads(path.read_text())
    for k in NEW_FIELDS:
        doc["failure"].pop(k, None)
    doc["failure"]["class"] = "code_error"
    doc["failure"]["summary"] = "an older reading"
    path.write_text(json.dumps(doc))
    e = explain(tmp_path, r.result["id"])
    assert e["failure"]["class"] == "missing_package"
    assert e["failure"]["recorded_class"] == "code_error"
    assert e["failure"]["recorded_summary"] == "an older reading"
    assert "differs" in e["diagnosis_source"]
    assert e["failure"]["escalation"]["flag"] == "--python VENV/bin/python"


def test_explain_an_old_timeout_and_a_completed_run(tmp_path):
    r, f = failed(tmp_path, """
        import time
        time.sleep(30)
    """, "--budget", "1", "--grace", "1", rc=124)
    strip_new_fields(r.run_dir)
    e = explain(tmp_path, r.result["id"])
    assert e["failure"]["class"] == "timeout" and e["failure"]["confidence"] == "high"
    ok = run_exp(write_exp(tmp_path, "print('accuracy: 0.9')\n", name="ok"), tmp_path / "runs")
    assert ok.rc == 0, ok.why()
    e = explain(tmp_path, ok.result["id"][:17])
    assert e["status"] == "completed" and e["failure"] is None
    assert e["metrics"]["values"]["accuracy"] == 0.9


def test_explain_bad_input(tmp_path):
    write_exp(tmp_path, "print('accuracy: 1')\n")
    run_exp(tmp_path / "exp", tmp_path / "runs")
    p = labbox("explain", "--json", "--runs-dir", tmp_path / "runs", "no-such-run")
    assert p.returncode == 2
    err = json.loads(p.stdout)
    assert err["schema"] == "labbox.error/1" and "no-such-run" in err["error"]["message"]
    p = labbox("explain", "--runs-dir", tmp_path / "runs")
    assert p.returncode == 2 and "no run id" in p.stderr
    p = labbox("explain", "--bogus", "x")
    assert p.returncode == 2
    p = labbox("explain", "--help")
    assert p.returncode == 0 and "labbox explain" in p.stdout
    p = labbox("explain", "--json", "--runs-dir", tmp_path / "empty" / "nowhere", "x")
    assert p.returncode == 2 and "no run index" in json.loads(p.stdout)["error"]["message"]


def test_octave_error_names_the_function_and_line(tmp_path):
    if not shutil.which("octave-cli"):
        pytest.skip("octave-cli is not installed")
    exp = write_exp(tmp_path, None, files={"main.m": "1;\nfunction r = pick(x)\n  r = x(5);\nend\n"
                                                     "v = [1 2];\ndisp(pick(v));\n"})
    p = labbox("run", "--json", "--runs-dir", tmp_path / "runs", exp)
    assert p.returncode == 1, p.stdout + p.stderr
    res = json.loads(p.stdout)
    f = res["failure"]
    assert f["class"] == "code_error" and f["confidence"] == "medium"
    # pick is a function of main.m (a script's own function): its file is known
    assert f["code_location"] == {"file": "main.m", "line": 3, "function": "pick"}
    assert any("pick at line 3" in e for e in f["evidence"])
    assert "in the code main.m line 3, in pick" in explain_text(tmp_path, res["id"])


def test_an_exit_status_above_128_is_no_signal(tmp_path):
    """labbox starts the interpreter itself and sees how it ends: sys.exit(137) is a status,
    not a SIGKILL; a signal that did end it is still named. explain agrees."""
    r, f = failed(tmp_path / "a", """
        import sys
        print("acc: 0.9")
        sys.exit(137)
    """, rc=1)
    assert r.result["exit_code"] == 137 and r.result["signal"] is None, r.why()
    assert "SIGKILL" not in f["summary"] and "killed by SIG" not in f["summary"], f
    assert not f["summary"].startswith("killed"), f
    assert "137" in f["summary"] and f["class"] == "code_error", f
    assert "os.kill" not in f["suggestion"], f
    doc = explain(tmp_path / "a", r.result["id"])
    assert doc["failure"]["summary"] == f["summary"], doc["failure"]
    r, f = failed(tmp_path / "b", """
        import os, signal
        os.kill(os.getpid(), signal.SIGSEGV)
    """, rc=1)
    assert r.result["signal"] == 11 and "SIGSEGV" in f["summary"], f
