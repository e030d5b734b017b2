"""A sandbox object with the shape research pipelines already call (AutoResearchClaw's
SandboxResult: returncode, stdout, stderr, elapsed_sec, metrics, timed_out), so a pipeline can
swap its local or docker sandbox for labbox in one line:

    from labbox.sandbox import LabboxSandbox
    sandbox = LabboxSandbox(workdir="artifacts/sandbox")
    res = sandbox.run(code, timeout_sec=300)            # a script as a string
    res = sandbox.run_project("exp/", timeout_sec=600)  # a directory with main.py

The code runs under labbox's isolation and time budget (timeout_sec), and its metrics are
labbox's (`name: value` lines, results.json), NaN and Inf included as floats.
"""
import itertools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import run as _run
from ._types import LabboxError, RunResult


@dataclass
class SandboxResult:
    """What one execution gave (AutoResearchClaw's fields), plus labbox's own verdict.

    stdout is the experiment's output (stdout and stderr interleaved as it wrote them:
    labbox records them in one log). stderr carries labbox's diagnosis when the run did not
    complete: the failure class and summary, the evidence lines and the suggestion."""
    returncode: int
    stdout: str
    stderr: str
    elapsed_sec: float
    metrics: Dict[str, Any] = field(default_factory=dict)
    timed_out: bool = False
    status: str = ""
    run_id: Optional[str] = None
    result: Optional[RunResult] = field(default=None, repr=False)


class LabboxSandbox:
    """Runs code or projects through `labbox run`, recording runs under workdir.

    Options are labbox.run's (memory="4g", network="none", python=..., gpus=..., cpus=...);
    labbox is found in LABBOX_BIN, else on PATH, unless labbox= names it."""

    def __init__(self, workdir, *, python: Optional[str] = None, labbox: Optional[str] = None,
                 **options):
        self.workdir = Path(workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.python = python
        self.labbox = labbox
        self.options = options
        self._counter = itertools.count(1)

    def _code_dir(self) -> Path:
        while True:
            d = self.workdir / "code" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{next(self._counter)}"
            try:
                d.mkdir(parents=True)
                return d
            except FileExistsError:
                continue

    def run(self, code: str, *, timeout_sec: float = 300) -> SandboxResult:
        """Run CODE (the text of a Python script) as main.py of a fresh experiment directory.
        A path to an existing directory is run as a project (run_project)."""
        if isinstance(code, os.PathLike) or (isinstance(code, str) and "\n" not in code
                                             and os.path.isdir(code)):
            return self.run_project(code, timeout_sec=timeout_sec)
        d = self._code_dir()
        (d / "main.py").write_text(code)
        # A script handed in as a string declares no metrics: a run that prints none is
        # still the script's own business, not an invalid run.
        (d / "labbox.yaml").write_text("metrics: none\n")
        return self._execute(d, timeout_sec=timeout_sec)

    def run_project(self, project_dir, *, entry_point: str = "main.py",
                    timeout_sec: float = 300, args: Optional[Sequence[str]] = None,
                    env_overrides: Optional[Dict[str, str]] = None) -> SandboxResult:
        """Run PROJECT_DIR's ENTRY_POINT with ARGS and extra environment variables."""
        return self._execute(Path(project_dir).resolve(), timeout_sec=timeout_sec,
                             entry=entry_point, args=list(args or ()),
                             env=dict(env_overrides or {}))

    def _execute(self, expdir: Path, *, timeout_sec: float, entry: Optional[str] = None,
                 args: Optional[List[str]] = None, env: Optional[Dict[str, str]] = None):
        opts = dict(self.options)
        merged_env = dict(opts.pop("env", None) or {})
        merged_env.update(env or {})
        start = time.monotonic()
        try:
            r = _run(expdir, budget=timeout_sec, python=self.python, entry=entry,
                     args=args or (), env=merged_env or None,
                     runs_dir=self.workdir / ".labbox" / "runs", labbox=self.labbox, **opts)
        except LabboxError as e:
            # labbox refused before running anything: the pipeline sees a failed execution
            # with the reason, as its own sandbox reports a docker error.
            return SandboxResult(returncode=e.exit_code if e.exit_code is not None else 125,
                                 stdout="", stderr=f"labbox: {e.message}\n",
                                 elapsed_sec=time.monotonic() - start, status=e.status or "error")
        wall = r.resources.wall_s
        if r.exit_code is not None:
            rc = r.exit_code
        elif r.signal:
            rc = -int(r.signal)
        else:
            rc = r.labbox_exit_code
        stderr = ""
        if r.failure and not r.ok:
            f = r.failure
            stderr = f"labbox: {r.status}: {f.class_}: {f.summary}\n"
            stderr += "".join(line + "\n" for line in f.evidence)
            if f.suggestion:
                stderr += f"suggestion: {f.suggestion}\n"
        for issue in r.metric_issues:
            stderr += f"labbox: metric issue: {issue.get('message', issue)}\n"
        return SandboxResult(returncode=rc, stdout=r.log(), stderr=stderr,
                             elapsed_sec=wall if wall is not None else time.monotonic() - start,
                             metrics=r.metrics.flat(), timed_out=r.timed_out, status=r.status,
                             run_id=r.id, result=r)
