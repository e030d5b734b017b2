"""A research pipeline swapping its sandbox for labbox in one line.

AutoResearchClaw (and pipelines like it) call a sandbox object's run(code, timeout_sec=...) and
read a SandboxResult: returncode, stdout, stderr, elapsed_sec, metrics, timed_out. labbox's
adapter has that shape, and the code runs isolated under a time budget, its metrics parsed
and checked by labbox (NaN and Inf flagged, never dropped).

    python3 examples/autoresearchclaw/pipeline.py [WORKDIR]   # labbox from LABBOX_BIN or PATH

Runs are recorded under WORKDIR (default ./labbox-sandbox).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))  # or pip install ./python

from labbox.sandbox import LabboxSandbox  # was: from researchclaw.experiment.sandbox import ExperimentSandbox

EXPERIMENT = '''
import random
random.seed(0)
print("TIME_ESTIMATE: 1s")
print("accuracy: 0.91")
for lr in (0.1, 0.01):
    print(f"condition: lr_{lr}")
    loss = sum(random.random() * lr for _ in range(1000)) / 1000
    print(f"loss: {loss}")
'''

BROKEN = "import numpy_that_does_not_exist\n"


def main():
    workdir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd() / "labbox-sandbox"
    sandbox = LabboxSandbox(workdir=workdir, python="/usr/bin/python3")
    for name, code in (("experiment", EXPERIMENT), ("broken", BROKEN)):
        res = sandbox.run(code, timeout_sec=60)
        print(f"{name}: returncode={res.returncode} timed_out={res.timed_out} "
              f"elapsed={res.elapsed_sec:.2f}s metrics={res.metrics}")
        if res.returncode != 0:
            # What a pipeline feeds back to its model for the next repair attempt.
            print("  " + res.stderr.strip().replace("\n", "\n  "))
    project = Path(__file__).resolve().parents[1] / "quickstart"
    res = sandbox.run_project(project, timeout_sec=300)
    print(f"quickstart: returncode={res.returncode} metrics={sorted(res.metrics)[:3]}...")


if __name__ == "__main__":
    main()
