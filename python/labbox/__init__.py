"""labbox from Python: run research experiments in labbox's sandbox and get typed results.

Every call runs the labbox command line with --json and reads its one document (standard
library only). labbox is found in the LABBOX_BIN environment variable, else on PATH, unless
a call names it (labbox="/path/to/labbox").

    import labbox
    r = labbox.run("exp/", budget=300, memory="4g")
    r.status, r.exit_code, r.metrics["accuracy"], r.failure
"""
import json as _json
import os
import shutil
import signal
import subprocess
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from ._types import (CheckResult, Explanation, Failure, Finding, LabboxError, LabboxNotFound,
                     Metrics, ProbeResult, Resources, RunFailed, RunResult, SchemaError,
                     RUN_SCHEMA, RUNS_SCHEMA)

__all__ = ["run", "start", "RunHandle", "check", "probe", "explain", "runs", "show", "rerun", "find_labbox",
           "RunResult", "CheckResult", "ProbeResult", "Explanation", "Metrics", "Failure",
           "Finding", "Resources", "LabboxError", "LabboxNotFound", "RunFailed", "SchemaError"]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


def find_labbox(labbox: Optional[str] = None) -> str:
    """The labbox binary: the argument, else $LABBOX_BIN, else labbox on PATH."""
    cand = labbox or os.environ.get("LABBOX_BIN") or shutil.which("labbox")
    if not cand or not os.access(cand, os.X_OK):
        raise LabboxNotFound("labbox not found: set LABBOX_BIN or put labbox on PATH"
                             + (f" ({cand} is not executable)" if cand else ""))
    return cand


def _call(argv: List[str], *, labbox=None, cwd=None, timeout=None, env=None):
    """Run labbox with argv (which asks for --json); return (document, CompletedProcess)."""
    cmd = [find_labbox(labbox), *argv]
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, capture_output=True,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise LabboxError(f"labbox did not finish within {timeout}s: {' '.join(cmd[1:3])}") from e
    try:
        doc = _json.loads(p.stdout.decode("utf-8", errors="surrogateescape"))
    except ValueError:
        err = p.stderr.decode(errors="replace").strip().splitlines()
        raise LabboxError(f"labbox exited {p.returncode} without a JSON document"
                          + (f": {err[-1]}" if err else ""), exit_code=p.returncode)
    return doc, p


def _opt(argv: List[str], flag: str, value):
    if value is not None:
        argv.append(f"--{flag}={value}")


def _sandbox_opts(argv, *, budget=None, memory=None, network=None, cpus=None, gpus=None,
                  pids_limit=None, env=None, volumes=None, allow_degraded=None,
                  disk_limit=None, grace=None):
    _opt(argv, "budget", budget)
    _opt(argv, "memory", memory)
    _opt(argv, "network", network)
    _opt(argv, "cpus", cpus)
    _opt(argv, "gpus", gpus)
    _opt(argv, "pids-limit", pids_limit)
    _opt(argv, "disk-limit", disk_limit)
    _opt(argv, "grace", grace)
    for k, v in (env or {}).items():
        argv.append(f"--env={k}={v}")
    for v in volumes or ():
        argv.append(f"--volume={v}")
    for what in ([allow_degraded] if isinstance(allow_degraded, str) else allow_degraded or ()):
        argv.append(f"--allow-degraded={what}")


class RunHandle:
    """A `labbox run` going on: wait() for its RunResult, or cancel() it as Ctrl-C would (the
    sandbox tree dies and the run is recorded as interrupted; wait() then returns that
    record). A KeyboardInterrupt while waiting cancels the run before it propagates."""

    def __init__(self, argv: List[str], *, labbox=None, cwd=None, check=False):
        self._check = check
        self._proc = subprocess.Popen([find_labbox(labbox), *argv], cwd=cwd,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
        self.pid = self._proc.pid
        self._result: Optional[RunResult] = None

    def poll(self) -> bool:
        """Whether labbox has finished."""
        return self._proc.poll() is not None

    def cancel(self):
        """End the run as Ctrl-C would; returns at once (wait() for the record)."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)

    def wait(self, timeout: Optional[float] = None) -> RunResult:
        """The run's result; after TIMEOUT seconds the run is cancelled and its
        (interrupted) record returned."""
        if self._result is not None:
            return self._result
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.cancel()
            out, err = self._proc.communicate()
        except BaseException:
            self.cancel()
            self._proc.communicate()
            raise
        try:
            doc = _json.loads(out.decode("utf-8", errors="surrogateescape"))
        except ValueError:
            lines = err.decode(errors="replace").strip().splitlines()
            raise LabboxError(f"labbox exited {self._proc.returncode} without a JSON document"
                              + (f": {lines[-1]}" if lines else ""),
                              exit_code=self._proc.returncode)
        self._result = RunResult.from_doc(doc)
        return self._result.raise_for_status() if self._check else self._result

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._proc.poll() is None:
            self.cancel()
            self._proc.communicate()
        self._proc.stdout.close()
        self._proc.stderr.close()


def start(expdir: PathLike, *, args: Sequence[str] = (), budget: Optional[float] = None,
          memory: Optional[Union[str, int]] = None, network: Optional[str] = None,
          cpus: Optional[float] = None, gpus: Optional[str] = None,
          pids_limit: Optional[int] = None, env: Optional[Dict[str, str]] = None,
          volumes: Iterable[str] = (), allow_degraded=None, disk_limit=None, grace=None,
          python: Optional[str] = None, entry: Optional[str] = None,
          policy: Optional[str] = None, metrics: Iterable[str] = (),
          runs_dir: Optional[PathLike] = None, mode: Optional[str] = None,
          image: Optional[str] = None, environment: Optional[PathLike] = None,
          escalate: Union[str, Iterable[str], None] = None, runtime_gate: Optional[str] = None,
          trust_project: bool = False, repair_cmd: Optional[str] = None,
          max_repairs: Optional[int] = None, apply: bool = False, check: bool = False,
          json: bool = True, labbox: Optional[str] = None,
          cwd: Optional[PathLike] = None) -> RunHandle:
    """Start `labbox run` on EXPDIR and return at once: a RunHandle (wait, cancel). The
    options are run()'s."""
    del json
    argv = ["run", "--json", "--quiet"]
    if environment is not None:
        environment = os.fspath(environment)
        if not environment or "=" in environment:
            # --env NAME=VALUE sets a variable: a name with '=' would be read as one.
            raise ValueError(f"environment {environment!r}: auto, a name or a path, "
                             "without '='")
        argv.append(f"--env={environment}")
    if escalate is not None:
        names = [escalate] if isinstance(escalate, str) else list(escalate)
        if names:
            argv.append("--escalate=" + ",".join(names))
    _opt(argv, "runtime-gate", runtime_gate)
    if trust_project:
        argv.append("--trust-project")
    _opt(argv, "repair-cmd", repair_cmd)
    _opt(argv, "max-repairs", max_repairs)
    if apply:
        argv.append("--apply")
    _sandbox_opts(argv, budget=budget, memory=memory, network=network, cpus=cpus, gpus=gpus,
                  pids_limit=pids_limit, env=env, volumes=volumes,
                  allow_degraded=allow_degraded, disk_limit=disk_limit, grace=grace)
    _opt(argv, "python", python)
    _opt(argv, "entry", entry)
    _opt(argv, "policy", policy)
    _opt(argv, "runs-dir", os.fspath(runs_dir) if runs_dir is not None else None)
    _opt(argv, "mode", mode)
    _opt(argv, "image", image)
    for m in metrics:
        argv.append(f"--metrics={m}")
    argv.append(os.path.abspath(os.path.join(os.fspath(cwd or "."), os.fspath(expdir))))
    if args:
        argv += ["--", *map(str, args)]
    return RunHandle(argv, labbox=labbox, cwd=cwd, check=check)


def run(expdir: PathLike, *, timeout: Optional[float] = None, **options) -> RunResult:
    """`labbox run` on EXPDIR: the run's verdict as a RunResult (result.json, schema checked).

    Options: args, budget, memory, network, cpus, gpus, pids_limit, env (variables),
    volumes, allow_degraded, disk_limit, grace, python, entry, policy, metrics, runs_dir,
    mode, image, environment (--env: auto, a name or a path), escalate ("network", or a list
    of network, gpus, env, memory), runtime_gate (off, record, on), trust_project,
    repair_cmd, max_repairs, apply, labbox, cwd (the flags of `labbox run`). A run that fails is still a result (status,
    failure); with check=True, or by calling result.raise_for_status(), it raises RunFailed
    carrying it. labbox refusing the run (a usage error, a limit this host cannot enforce)
    raises LabboxError with labbox's labbox.error/1 document. After `timeout` seconds (default
    none: the budget ends the run) the run is cancelled as Ctrl-C would and its interrupted
    record returned; `json` is accepted for symmetry with the command line and is always
    true."""
    with start(expdir, **options) as h:
        return h.wait(timeout)


def check(*paths: PathLike, policy: Optional[str] = None, python: Optional[str] = None,
          entry: Optional[str] = None, labbox: Optional[str] = None,
          cwd: Optional[PathLike] = None) -> CheckResult:
    """`labbox check` on PATHS (experiment directories or files): the static check's verdict.
    A rejected experiment is a result with rejected=True, not an exception."""
    if not paths:
        raise ValueError("labbox.check needs at least one path")
    argv = ["check", "--json"]
    _opt(argv, "policy", policy)
    _opt(argv, "python", python)
    _opt(argv, "entry", entry)
    argv += ["--", *(os.fspath(p) for p in paths)]
    doc, _ = _call(argv, labbox=labbox, cwd=cwd)
    return CheckResult.from_doc(doc)


def probe(*, labbox: Optional[str] = None) -> ProbeResult:
    """`labbox probe`: what isolation this host offers this user."""
    doc, _ = _call(["probe", "--json"], labbox=labbox)
    return ProbeResult.from_doc(doc)


def _runs_dir(argv, runs_dir):
    _opt(argv, "runs-dir", os.fspath(runs_dir) if runs_dir is not None else None)


def show(run_id: str, *, runs_dir: Optional[PathLike] = None, labbox: Optional[str] = None,
         cwd: Optional[PathLike] = None) -> Dict[str, Any]:
    """`labbox runs show ID`: the index row, result.json and manifest.json of a recorded run."""
    argv = ["runs", "show", "--json"]
    _runs_dir(argv, runs_dir)
    doc, _ = _call(argv + ["--", run_id], labbox=labbox, cwd=cwd)
    if doc.get("schema") == "labbox.error/1":
        raise LabboxError((doc.get("error") or {}).get("message", "labbox failed"), doc)
    return doc


def explain(run_id: str, *, runs_dir: Optional[PathLike] = None, labbox: Optional[str] = None,
            cwd: Optional[PathLike] = None) -> Explanation:
    """Why a recorded run ended as it did: its failure (class, confidence, evidence, the
    experiment's frame, suggestion, escalation), what the code needs, findings and metric
    issues. A run recorded before labbox diagnosed so is diagnosed again from its run.log."""
    doc = show(run_id, runs_dir=runs_dir, labbox=labbox, cwd=cwd)
    result = RunResult.from_doc(doc.get("result"))
    argv = ["explain", "--json"]
    _runs_dir(argv, runs_dir)
    ex, _ = _call(argv + ["--", result.id or run_id], labbox=labbox, cwd=cwd)
    if ex.get("schema") == "labbox.error/1":
        raise LabboxError((ex.get("error") or {}).get("message", "labbox failed"), ex)
    return Explanation(id=result.id, status=result.status, exit_code=result.exit_code,
                       failure=Failure.from_doc(ex.get("failure")), findings=result.findings,
                       metric_issues=result.metric_issues, result=result, doc=doc,
                       needs=ex.get("needs"), diagnosis_source=ex.get("diagnosis_source"))


def runs(*, status: Optional[str] = None, metric: Optional[str] = None,
         since: Optional[str] = None, until: Optional[str] = None, limit: Optional[int] = None,
         runs_dir: Optional[PathLike] = None, labbox: Optional[str] = None,
         cwd: Optional[PathLike] = None) -> List[Dict[str, Any]]:
    """`labbox runs list`: index rows, newest first."""
    argv = ["runs", "list", "--json"]
    for flag, v in (("status", status), ("metric", metric), ("since", since),
                    ("until", until), ("limit", limit)):
        _opt(argv, flag, v)
    _runs_dir(argv, runs_dir)
    doc, _ = _call(argv, labbox=labbox, cwd=cwd)
    if doc.get("schema") == "labbox.error/1":
        raise LabboxError((doc.get("error") or {}).get("message", "labbox failed"), doc)
    if doc.get("schema") != RUNS_SCHEMA:
        raise SchemaError(f"labbox printed schema {doc.get('schema')!r}; this client reads "
                          f"{RUNS_SCHEMA!r}", doc)
    return list(doc.get("runs") or [])


def rerun(run_id: str, *, runs_dir: Optional[PathLike] = None, labbox: Optional[str] = None,
          cwd: Optional[PathLike] = None, timeout: Optional[float] = None) -> RunResult:
    """`labbox rerun ID`: the new run's result (its `reproduced` says whether metrics match)."""
    argv = ["rerun", "--json", "--quiet"]
    _runs_dir(argv, runs_dir)
    doc, _ = _call(argv + ["--", run_id], labbox=labbox, cwd=cwd, timeout=timeout)
    return RunResult.from_doc(doc)
