"""Failure suggestions name only what labbox has: every `--flag` a suggestion names is one
`labbox run --help` lists, and none sends the user to a backend, a file or a mode labbox
does not have (docker, Slurm, ssh, requirements.txt, --mode)."""
import re

import pytest

from conftest import REPO, labbox, run_exp, write_exp

# Where failure suggestions are written: the diagnosis, and the run pipeline's own verdicts.
SUGGESTION_SOURCES = ["src/diagnose/failure.c", "src/diagnose/classify.c", "src/diagnose/refine.c",
                      "src/diagnose/chain.c", "src/diagnose/r_octave.c", "src/diagnose/timeout.c",
                      "src/diagnose/warnings.c", "src/run/run.c"]
# --mode exists (local, docker, ssh, slurm and colab), so they may be named; the backends it
# does not have may not.
NOT_IN_LABBOX = re.compile(r"requirements\.txt|conda install",
                           re.IGNORECASE)
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def run_help_flags():
    p = labbox("run", "--help")
    assert p.returncode == 0
    return set(FLAG.findall(p.stdout))


def c_string_literals(path):
    """The text of every C string literal in a file, adjacent literals joined."""
    src = (REPO / path).read_text()
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    lits = []
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"(\s*"((?:[^"\\\n]|\\.)*)")*', src):
        lits.append("".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0))))
    return lits


def test_every_flag_in_a_suggestion_exists():
    flags = run_help_flags()
    assert {"--budget", "--memory", "--python", "--network"} <= flags
    unknown = []
    for path in SUGGESTION_SOURCES:
        for lit in c_string_literals(path):
            for f in FLAG.findall(lit):
                if f not in flags:
                    unknown.append((path, f, lit[:120]))
    assert not unknown, f"suggestions name flags `labbox run --help` does not list: {unknown}"


def test_no_suggestion_names_what_labbox_lacks():
    bad = [(path, lit[:160]) for path in SUGGESTION_SOURCES
           for lit in c_string_literals(path) if NOT_IN_LABBOX.search(lit)]
    assert not bad, f"suggestions name things labbox does not have: {bad}"


# The same through the real binary: failures of each class, their suggestion read back.
FAILURES = {
    "missing_package": "import labbox_no_such_module_xyz\n",
    "gpu_unavailable": "raise RuntimeError('No CUDA GPUs are available')\n",
    "wrong_env": "raise ImportError('numpy.core.multiarray failed to import')\n",
    "network": "raise ConnectionError('Temporary failure in name resolution')\n",
    "oom": "raise MemoryError()\n",
    "code_error": "raise ValueError('boom')\n",
    "missing_data": "open('data/train.csv')\n",
    "sandbox_restriction": "open('/etc/labbox-test-ro', 'w')\n",
    # issue 9 §4: the causes named since, each with its own suggestion
    "gpu_unavailable_assert": "assert False, 'Device set to cuda, but cuda is unavailable.'\n",
    "missing_data_hf_dataset": "class DatasetNotFoundError(FileNotFoundError): pass\n"
                               "raise DatasetNotFoundError(\"Dataset 'x/y' doesn't exist on the "
                               "Hub or cannot be accessed.\")\n",
    "sandbox_restriction_shm": "open('/dev/shm/big.bin', 'wb').write(b'x' * (4 << 20))\n",
    "sandbox_restriction_socket": "import socket\nsocket.create_connection(('10.1.2.3', 80))\n",
}
# Flags some suggestions must name: the one that lifts the restriction.
MUST_NAME = {"sandbox_restriction_shm": "--shm-size", "sandbox_restriction_socket": "--network",
             "gpu_unavailable_assert": "--gpus"}
CLASSES = ("missing_package", "gpu_unavailable", "wrong_env", "network", "oom", "code_error",
           "missing_data", "sandbox_restriction")
OPTS = {"sandbox_restriction_shm": ("--shm-size", "1m")}


@pytest.mark.parametrize("cls", sorted(FAILURES))
def test_suggestions_of_real_failures_name_real_flags(tmp_path, cls):
    flags = run_help_flags()
    exp = write_exp(tmp_path, FAILURES[cls])
    r = run_exp(exp, tmp_path / "runs", "--policy", "permissive", *OPTS.get(cls, ()))
    assert r.rc == 1, r.why()
    failure = r.result["failure"]
    assert failure and failure["suggestion"], r.why()
    sug = failure["suggestion"]
    assert not NOT_IN_LABBOX.search(sug), sug
    assert set(FLAG.findall(sug)) <= flags, (cls, sug)
    base = max((c for c in CLASSES if cls == c or cls.startswith(c + "_")), key=len)
    assert failure["class"] == base, r.why()
    if cls in MUST_NAME:
        assert MUST_NAME[cls] in sug, (cls, sug)
