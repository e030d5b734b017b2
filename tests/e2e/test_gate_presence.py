"""The runtime gate is in the interpreter, or the run says it was not.

An entry whose name the interpreter reads as its own options (`-S -c CODE`, `--eval=CODE`)
ran code the check never read, with site (and so the gate) skipped, and the run was
`completed`. Such names are refused before anything runs; and a run whose gate never said it
was in is no completed run, whatever the reason.
"""
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from conftest import labbox, run_exp, write_exp

PAYLOAD = 'open("{marker}", "w").write("ran"); print("accuracy: 0.99")'


@pytest.mark.parametrize("name", [
    '-Scexec(open("payload.txt").read())#.py',
    '-Ipayload.py',
    '--eval=system("touch MARKER");%.m',
])
@pytest.mark.parametrize("how", ["yaml", "flag"])
def test_an_entry_read_as_interpreter_options_is_refused(tmp_path, name, how):
    marker = tmp_path / f"marker-{uuid.uuid4().hex[:8]}"
    name = name.replace("MARKER", marker.name)
    exp = write_exp(tmp_path, None, yaml=f"entry: '{name}'\n" if how == "yaml" else None,
                    files={"payload.txt": PAYLOAD.format(marker=marker)})
    (exp / name).write_text('print("accuracy: 0.1")\n')
    opts = ["--entry", name] if how == "flag" else []
    proc = labbox("run", "--python", "/usr/bin/python3", "--runs-dir", tmp_path / "runs",
                  *opts, exp)
    assert proc.returncode == 2, proc.stderr
    assert "starts with '-'" in proc.stderr and name in proc.stderr, proc.stderr
    assert not list(tmp_path.rglob(marker.name))
    # The same with --json: one JSON error document naming the problem.
    proc = labbox("run", "--json", "--python", "/usr/bin/python3", "--runs-dir",
                  tmp_path / "runs", *opts, exp)
    assert proc.returncode == 2 and "starts with '-'" in proc.stdout, proc.stdout


@pytest.fixture
def siteless_python(tmp_path):
    """An interpreter that answers labbox's own questions (`-c`) as the real one, and runs an
    entry without site, so without the gate: what any way past site would look like."""
    cc = shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "fake.c"
    src.write_text(r'''
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "-c") == 0) {
			execv("/usr/bin/python3", argv);
			return 127;
		}
	printf("accuracy: 0.9\n");
	return 0;
}
''')
    d = tmp_path / "fakebin"
    d.mkdir()
    subprocess.run([cc, "-O2", "-o", d / "python3", src], check=True)
    return d / "python3"


def test_a_run_whose_gate_never_started_is_not_completed(tmp_path, siteless_python):
    exp = write_exp(tmp_path, 'print("accuracy: 0.9")\n')
    run = run_exp(exp, tmp_path / "runs", python=siteless_python)
    assert run.rc == 1, run.why()
    assert run.result["status"] == "failed", run.why()
    assert run.result["failure"]["class"] == "gate_missing", run.why()
    g = run.result["runtime_gate"]
    assert g["installed"] is False and g["enforced"] is False, run.why()
    assert (run.run_dir / "run.log").exists()
    # Without the gate asked for, the same run is what it is.
    off = run_exp(exp, tmp_path / "runs", "--runtime-gate", "off", python=siteless_python)
    assert off.rc == 0 and off.result["status"] == "completed", off.why()


def test_a_run_with_its_gate_is_completed(tmp_path):
    exp = write_exp(tmp_path, 'print("accuracy: 0.9")\n')
    run = run_exp(exp, tmp_path / "runs")
    assert run.rc == 0 and run.result["status"] == "completed", run.why()
    assert run.result["runtime_gate"]["installed"] is True, run.why()


# Variables that make a native library load a shared object (or Tcl code) from where they
# say: the experiment's configuration may not set them before the run, and the gate refuses
# setting them during it.
LOADER_VARS = ["OPENSSL_CONF", "OPENSSL_MODULES", "HDF5_PLUGIN_PATH", "CUDA_INJECTION64_PATH",
               "GIO_EXTRA_MODULES",
               "TCL_LIBRARY", "GCONV_PATH"]


@pytest.mark.parametrize("var", LOADER_VARS)
def test_a_sweeps_environment_may_not_name_what_a_library_loads(tmp_path, var):
    exp = write_exp(tmp_path, 'print("accuracy: 0.5")\n', yaml=f"""
        sweep:
          seeds: [0]
          env:
            {var}: "lib.so"
        """)
    p = labbox("sweep", "--json", "--python", "/usr/bin/python3", "--runs-dir",
               tmp_path / "runs", exp)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert var in p.stdout + p.stderr
    assert not list((tmp_path / "runs").glob("2*")), "a cell ran"


@pytest.mark.parametrize("var", ["HDF5_PLUGIN_PATH", "CUDA_INJECTION64_PATH", "TCL_LIBRARY"])
def test_the_gate_refuses_setting_what_a_library_loads(tmp_path, var):
    exp = write_exp(tmp_path, f"""
        import os
        os.environ["{var}"] = os.getcwd()
        print("set: 1")
    """)
    run = run_exp(exp, tmp_path / "runs", "--policy", "permissive", "--runtime-gate", "on")
    assert run.rc == 1, run.why()
    assert run.result["failure"]["class"] == "gate_refused", run.why()
    ev = [e for e in run.result["runtime_gate"]["events"] if e["refused"]]
    assert ev and ev[0]["event"] == "os.putenv" and ev[0]["rule"] == "LB106", run.why()
