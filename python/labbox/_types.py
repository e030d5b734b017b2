"""Typed views of labbox's JSON documents. Each dataclass mirrors a document's schema
(docs/result-json.md for labbox.run/1) and keeps the whole document in `doc`, so fields added
by a later labbox (additions keep the schema version) are never lost."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

#: The schema versions this client reads; another major version is refused (SchemaError).
RUN_SCHEMA = "labbox.run/1"
CHECK_SCHEMA = "labbox.check/1"
PROBE_SCHEMA = "labbox.probe/1"
ERROR_SCHEMA = "labbox.error/1"
RUNS_SCHEMA = "labbox.runs/1"


class LabboxError(Exception):
    """labbox refused or could not do what was asked (a labbox.error/1 document: usage errors,
    limits it cannot enforce, unknown runs). `doc` is the document, `exit_code` labbox's exit
    status, `status` its word for it (usage_error, infra_error...)."""

    def __init__(self, message: str, doc: Optional[dict] = None, exit_code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        self.doc = doc or {}
        self.exit_code = exit_code if exit_code is not None else self.doc.get("exit_code")
        self.status = self.doc.get("status")
        self.messages = (self.doc.get("error") or {}).get("messages", [message])


class LabboxNotFound(LabboxError):
    """No labbox binary: set LABBOX_BIN or put labbox on PATH."""


class SchemaError(LabboxError):
    """labbox printed a document this client does not know how to read."""


class RunFailed(LabboxError):
    """A run did not complete with valid metrics; `result` is its RunResult (the verdict:
    status, failure class, evidence and suggestion)."""

    def __init__(self, result: "RunResult"):
        f = result.failure
        why = f" ({f.class_}: {f.summary})" if f else ""
        super().__init__(f"run {result.id} {result.status}, exit {result.labbox_exit_code}{why}",
                         result.doc, result.labbox_exit_code)
        self.result = result


def _check_schema(doc: Any, want: str) -> dict:
    if not isinstance(doc, dict):
        raise SchemaError(f"labbox printed {type(doc).__name__}, not a JSON object")
    got = doc.get("schema")
    if got == ERROR_SCHEMA:
        err = doc.get("error") or {}
        raise LabboxError(err.get("message", "labbox failed"), doc)
    if got != want:
        raise SchemaError(f"labbox printed schema {got!r}; this client reads {want!r}", doc)
    return doc


@dataclass
class Finding:
    """One static-check finding (rule id, place, message)."""
    id: str
    severity: str
    message: str
    file: Optional[str] = None
    line: Optional[int] = None
    col: Optional[int] = None
    category: Optional[str] = None
    rejects: bool = False
    suppressed: bool = False

    @classmethod
    def from_doc(cls, d: dict) -> "Finding":
        return cls(id=d.get("id", ""), severity=d.get("severity", ""),
                   message=d.get("message", ""), file=d.get("file"), line=d.get("line"),
                   col=d.get("col"), category=d.get("category"),
                   rejects=bool(d.get("rejects")), suppressed=bool(d.get("suppressed")))


@dataclass
class Failure:
    """Why a run failed: `class_` is failure.class (code_error, missing_package, timeout,
    oom, interrupted, ...)."""
    class_: str
    summary: str = ""
    evidence: List[str] = field(default_factory=list)
    suggestion: Optional[str] = None
    exception: Optional[str] = None
    location: Optional[dict] = None
    # high, medium or low, and why (docs/result-json.md, Failure)
    confidence: Optional[str] = None
    confidence_reason: Optional[str] = None
    # the innermost frame in the experiment's own code: {file, line, function, text}
    code_location: Optional[dict] = None
    # the flag or environment that would lift it: {grants, flag, environment, granted, note}
    escalation: Optional[dict] = None

    @classmethod
    def from_doc(cls, d: Optional[dict]) -> Optional["Failure"]:
        if not d:
            return None
        return cls(class_=d.get("class", ""), summary=d.get("summary", ""),
                   evidence=list(d.get("evidence") or []), suggestion=d.get("suggestion"),
                   exception=d.get("exception"), location=d.get("location"),
                   confidence=d.get("confidence"), confidence_reason=d.get("confidence_reason"),
                   code_location=d.get("code_location"), escalation=d.get("escalation"))


@dataclass
class Resources:
    wall_s: Optional[float] = None
    cpu_user_s: Optional[float] = None
    cpu_sys_s: Optional[float] = None
    peak_rss_bytes: Optional[int] = None
    peak_gpu_bytes: Optional[int] = None

    @classmethod
    def from_doc(cls, d: Optional[dict]) -> "Resources":
        d = d or {}
        return cls(wall_s=d.get("wall_s"), cpu_user_s=d.get("cpu_user_s"),
                   cpu_sys_s=d.get("cpu_sys_s"), peak_rss_bytes=d.get("peak_rss_bytes"),
                   peak_gpu_bytes=d.get("peak_gpu_bytes"))


_NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _numbers(v):
    """result.json writes non-finite numbers as the strings "NaN", "Infinity", "-Infinity"
    (strict JSON has no spelling for them); metrics are numbers, so they become floats."""
    if isinstance(v, str):
        return _NONFINITE.get(v, v)
    if isinstance(v, dict):
        return {k: _numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_numbers(x) for x in v]
    return v


@dataclass
class Metrics:
    """result.json's metrics: `values` (name -> value, outside any condition), `conditions`
    (condition -> name -> value, in `condition_order`), `files` (results files by name).
    Indexing reads values: metrics["accuracy"]. NaN and Inf are floats here."""
    values: Dict[str, Any] = field(default_factory=dict)
    conditions: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    condition_order: List[str] = field(default_factory=list)
    files: Dict[str, Any] = field(default_factory=dict)
    time_estimate_s: Optional[float] = None

    @classmethod
    def from_doc(cls, d: Optional[dict]) -> "Metrics":
        d = d or {}
        return cls(values=_numbers(dict(d.get("values") or {})),
                   conditions=_numbers(dict(d.get("conditions") or {})),
                   condition_order=list(d.get("condition_order") or []),
                   files=_numbers(dict(d.get("files") or {})),
                   time_estimate_s=d.get("time_estimate_s"))

    def __getitem__(self, name):
        return self.values[name]

    def __contains__(self, name):
        return name in self.values

    def flat(self) -> Dict[str, Any]:
        """values, and each condition's as "CONDITION/name"."""
        out = dict(self.values)
        for c in self.condition_order or list(self.conditions):
            for k, v in (self.conditions.get(c) or {}).items():
                out[f"{c}/{k}"] = v
        return out


@dataclass
class RunResult:
    """result.json (labbox.run/1): the verdict of one run."""
    id: str
    status: str
    exit_code: Optional[int]
    labbox_exit_code: int
    run_dir: str
    signal: Optional[int] = None
    timed_out: bool = False
    oom_killed: bool = False
    partial: bool = False
    started_at: Optional[str] = None
    ended_at: Optional[str] = None
    budget_s: Optional[float] = None
    resources: Resources = field(default_factory=Resources)
    metrics: Metrics = field(default_factory=Metrics)
    metric_issues: List[dict] = field(default_factory=list)
    findings: List[Finding] = field(default_factory=list)
    failure: Optional[Failure] = None
    isolation: Dict[str, Any] = field(default_factory=dict)
    doc: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_doc(cls, doc: dict) -> "RunResult":
        d = _check_schema(doc, RUN_SCHEMA)
        return cls(id=d.get("id", ""), status=d.get("status", ""), exit_code=d.get("exit_code"),
                   labbox_exit_code=d.get("labbox_exit_code", d.get("exit_code") or 0),
                   run_dir=d.get("run_dir", ""), signal=d.get("signal"),
                   timed_out=bool(d.get("timed_out")), oom_killed=bool(d.get("oom_killed")),
                   partial=bool(d.get("partial")), started_at=d.get("started_at"),
                   ended_at=d.get("ended_at"), budget_s=d.get("budget_s"),
                   resources=Resources.from_doc(d.get("resources")),
                   metrics=Metrics.from_doc(d.get("metrics")),
                   metric_issues=list(d.get("metric_issues") or []),
                   findings=[Finding.from_doc(f) for f in d.get("findings") or []],
                   failure=Failure.from_doc(d.get("failure")),
                   isolation=dict(d.get("isolation") or {}), doc=d)

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def attempts(self) -> List[dict]:
        """Every attempt of a run with --escalate or --repair-cmd (result.json's attempts),
        first to last; empty for a run of one attempt."""
        return list(self.doc.get("attempts") or [])

    @property
    def environment(self) -> Dict[str, Any]:
        """The environment block of a run with environment= (--env): what was asked, the
        environments checked, the one chosen."""
        return dict(self.doc.get("environment") or {})

    @property
    def log_path(self) -> Optional[str]:
        return (self.doc.get("log") or {}).get("path")

    def log(self) -> str:
        """The experiment's output (run.log: stdout and stderr as it wrote them)."""
        p = self.log_path
        if not p:
            return ""
        with open(p, "rb") as f:
            return f.read().decode("utf-8", errors="replace")

    def raise_for_status(self) -> "RunResult":
        if not self.ok:
            raise RunFailed(self)
        return self


@dataclass
class CheckResult:
    """labbox.check/1: the static check's verdict."""
    policy: str
    rejected: bool
    files: int
    counts: Dict[str, int]
    findings: List[Finding]
    doc: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_doc(cls, doc: dict) -> "CheckResult":
        d = _check_schema(doc, CHECK_SCHEMA)
        return cls(policy=d.get("policy", ""), rejected=bool(d.get("rejected")),
                   files=d.get("files", 0), counts=dict(d.get("counts") or {}),
                   findings=[Finding.from_doc(f) for f in d.get("findings") or []], doc=d)


@dataclass
class ProbeResult:
    """labbox.probe/1: what isolation this host offers this user."""
    uid: Optional[int]
    namespaces: Dict[str, Any]
    seccomp: Dict[str, Any]
    doc: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_doc(cls, doc: dict) -> "ProbeResult":
        d = _check_schema(doc, PROBE_SCHEMA)
        return cls(uid=d.get("uid"), namespaces=dict(d.get("namespaces") or {}),
                   seccomp=dict(d.get("seccomp") or {}), doc=d)

    def __getitem__(self, key):
        return self.doc[key]


@dataclass
class Explanation:
    """Why a recorded run ended as it did (`labbox explain`, with `labbox runs show`'s result)."""
    id: str
    status: str
    exit_code: Optional[int]
    failure: Optional[Failure]
    findings: List[Finding]
    metric_issues: List[dict]
    result: RunResult
    doc: Dict[str, Any] = field(default_factory=dict, repr=False)
    # what the static check saw the code needs (None: recorded before needs existed)
    needs: Optional[List[dict]] = None
    diagnosis_source: Optional[str] = None

    def __str__(self):
        s = f"run {self.id} {self.status} (exit {self.exit_code})"
        if self.failure:
            s += f"\nfailure: {self.failure.class_}: {self.failure.summary}"
            if self.failure.suggestion:
                s += f"\nsuggestion: {self.failure.suggestion}"
        for m in self.metric_issues:
            s += f"\nmetric issue: {m.get('message', m)}"
        return s
