"""Shared frozen value types: what flows between extract, parse, decide, run, observe and audit.

All types are frozen, slotted, keyword-only dataclasses (enums are ``StrEnum``) with a stable JSON
form through :mod:`safeexec.model.codec` (``value.to_json()`` / ``Type.from_json(data)``). Units are
in field names. Positions are 1-based lines and 1-based columns, as a person reads them.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Self

from safeexec.errors import Denied
from safeexec.model import codec
from safeexec.model.fieldwise import Fieldwise

__all__ = [
    "Action",
    "ActionSource",
    "Artifact",
    "AuditEvent",
    "BlobRef",
    "Bound",
    "BoundKind",
    "Budget",
    "Decision",
    "DisplayData",
    "DisplayKind",
    "Enforcement",
    "Estimate",
    "ExecError",
    "ExecRequest",
    "ExecResult",
    "ExecStatus",
    "ExecutionEvent",
    "Finding",
    "GuardDenied",
    "LimitHit",
    "Limits",
    "MimeItem",
    "NetworkConnection",
    "NetworkVerdict",
    "Observation",
    "Outcome",
    "OutputChunk",
    "OutputCut",
    "Severity",
    "Span",
    "StreamName",
    "SyscallKilled",
    "ToolCalled",
    "ToolRefused",
    "Usage",
    "Verdict",
    "span_at",
]

_MiB = 1024 * 1024


class _JSON(Fieldwise):
    """Mixin: the stable JSON form of a value type, and its field-wise ``==``, hash and repr
    (from :class:`~safeexec.model.fieldwise.Fieldwise`; each class says ``eq=False,
    repr=False``)."""

    __slots__ = ()

    def to_json(self) -> codec.JSONValue:
        """Return this value as JSON-compatible data (dicts, lists, scalars)."""
        return codec.to_json(self)

    @classmethod
    def from_json(cls, data: object) -> Self:
        """Rebuild a value from :meth:`to_json` output; raises ``ValueError`` on a bad shape."""
        return codec.from_json(cls, data)


class Verdict(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    NEEDS_APPROVAL = "needs_approval"


class Severity(StrEnum):
    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Enforcement(StrEnum):
    """What a finding does to the verdict.

    ``deny`` blocks; ``approve`` makes the verdict ``needs_approval`` (a human or harness callback
    decides); ``warn`` and ``audit`` only record.
    """

    DENY = "deny"
    APPROVE = "approve"
    WARN = "warn"
    AUDIT = "audit"


class BoundKind(StrEnum):
    KNOWN = "known"
    UNBOUNDED = "unbounded"
    UNKNOWN = "unknown"


class ExecStatus(StrEnum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    LIMIT_EXCEEDED = "limit_exceeded"
    KILLED = "killed"
    DENIED_AT_RUNTIME = "denied_at_runtime"
    INTERRUPTED = "interrupted"  # stopped by KeyboardInterrupt in the cell; the state is kept


class StreamName(StrEnum):
    """Which of a cell's output streams a chunk came from."""

    STDOUT = "stdout"
    STDERR = "stderr"


class DisplayKind(StrEnum):
    """Where a rich value came from: the cell's last expression, or a ``display(obj)`` call."""

    RESULT = "result"
    DISPLAY = "display"


class ActionSource(StrEnum):
    """Where in the model's response the code came from."""

    FENCED = "fenced"
    TOOL_CALL = "tool_call"
    RAW = "raw"


def sha256_hex(data: bytes | str) -> str:
    """Hex sha256 of bytes, or of a string encoded as UTF-8 (surrogates escaped)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Span(_JSON):
    """A source range; lines and columns are 1-based, ``end_*`` inclusive of the last character."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int


# Span's slots, for span_at(): each set directly instead of through the frozen class's __init__.
_SET_START_LINE, _SET_START_COLUMN, _SET_END_LINE, _SET_END_COLUMN = (
    vars(Span)[name].__set__ for name in ("start_line", "start_column", "end_line", "end_column")
)


def span_at(start_line: int, start_column: int, end_line: int, end_column: int) -> Span:
    """``Span(start_line=..., ...)``, equal to it in every way, made in under half the time (the
    DSL's front end makes one per syntax node, and a frozen ``__init__`` pays a keyword call and
    an ``object.__setattr__`` per field)."""
    span: Span = object.__new__(Span)
    _SET_START_LINE(span, start_line)
    _SET_START_COLUMN(span, start_column)
    _SET_END_LINE(span, end_line)
    _SET_END_COLUMN(span, end_column)
    return span


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Action(_JSON):
    """One piece of code the model asked to run."""

    action_id: str
    source: ActionSource
    language: str
    code: str
    code_sha256: str

    @classmethod
    def create(
        cls,
        code: str,
        *,
        source: ActionSource = ActionSource.RAW,
        language: str = "python",
        action_id: str | None = None,
    ) -> Action:
        """Make an Action, hashing ``code`` and drawing a fresh id unless one is given."""
        return cls(
            action_id=action_id or f"a-{uuid.uuid4().hex[:12]}",
            source=source,
            language=language,
            code=code,
            code_sha256=sha256_hex(code),
        )


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Finding(_JSON):
    """One reason (or note) a rule raised about an action."""

    rule: str
    name: str
    message: str
    severity: Severity
    enforcement: Enforcement
    span: Span | None = None
    evidence: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Bound(_JSON):
    """A static bound: ``known`` with a value, or ``unbounded``/``unknown`` with the reason."""

    kind: BoundKind
    value: float | None = None
    reason: str = ""

    @classmethod
    def known(cls, value: float, reason: str = "") -> Bound:
        return cls(kind=BoundKind.KNOWN, value=value, reason=reason)

    @classmethod
    def unknown(cls, reason: str) -> Bound:
        return cls(kind=BoundKind.UNKNOWN, reason=reason)

    @classmethod
    def unbounded(cls, reason: str) -> Bound:
        return cls(kind=BoundKind.UNBOUNDED, reason=reason)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Estimate(_JSON):
    """Static resource bounds: ``cpu`` in basic operations, ``memory``/``output`` in bytes."""

    cpu: Bound
    memory: Bound
    output: Bound
    tool_calls: Bound


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Limits(_JSON):
    """Execution limits for one run; every field has a default and its unit in its name."""

    cpu_seconds: float = 5.0
    wall_seconds: float = 10.0
    memory_bytes: int = 1024 * _MiB
    output_bytes: int = 1 * _MiB
    file_size_bytes: int = 64 * _MiB
    max_processes: int = 32
    max_open_files: int = 256


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Budget(_JSON):
    """The double budget: agent steps and execution resources left for the session."""

    steps_left: int
    cpu_seconds_left: float
    tool_calls_left: int

    def charge(self, *, steps: int = 1, cpu_seconds: float = 0.0, tool_calls: int = 0) -> Budget:
        """Return the budget after one step that used ``cpu_seconds`` and ``tool_calls``.

        Steps and CPU seconds stop at zero (a step refused for an exhausted budget spends nothing
        more); tool calls may go below zero, which is how an overspent step shows as exhausted.
        """
        return Budget(
            steps_left=max(0, self.steps_left - steps),
            cpu_seconds_left=max(0.0, self.cpu_seconds_left - cpu_seconds),
            tool_calls_left=self.tool_calls_left - tool_calls,
        )

    @property
    def exhausted(self) -> tuple[str, ...]:
        """Names of the exhausted dimensions (empty when there is budget left in all three)."""
        out = []
        if self.steps_left <= 0:
            out.append("steps")
        if self.cpu_seconds_left <= 0:
            out.append("cpu_seconds")
        if self.tool_calls_left < 0:
            out.append("tool_calls")
        return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Decision(_JSON):
    """The outcome of the static gate: the verdict and the reasons for it."""

    verdict: Verdict
    findings: tuple[Finding, ...] = ()
    backend: str = ""
    limits: Limits = field(default_factory=Limits)
    estimate: Estimate | None = None
    policy_id: str = ""
    policy_digest: str = ""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW

    def raise_for_verdict(self) -> None:
        """Raise :class:`~safeexec.errors.Denied` unless the verdict is ``allow``."""
        if self.verdict is not Verdict.ALLOW:
            raise Denied(self)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ExecRequest(_JSON):
    """What a backend session is asked to run."""

    action_id: str
    code: str
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class BlobRef(_JSON):
    """A content-addressed reference to bytes in the blob store."""

    sha256: str
    size: int

    @property
    def uri(self) -> str:
        return f"blob://sha256:{self.sha256}"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Artifact(_JSON):
    """A file the code created or changed (path relative to the workdir), stored as a blob."""

    name: str
    media_type: str
    blob: BlobRef


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Usage(_JSON):
    """Resources one run used, as measured from outside the sandbox.

    In the confined worker ``cpu_seconds`` is the session's CPU since the previous run ended:
    what processes or threads an earlier cell left running used in between is charged here."""

    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    max_rss_bytes: int = 0
    output_bytes: int = 0
    tool_calls: int = 0


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ToolCalled(_JSON):
    """A host tool the code called through its capability (digests of the arguments and result)."""

    kind: ClassVar[str] = "tool_called"
    tool: str
    capability_id: str
    arguments_sha256: str
    result_sha256: str
    effects: tuple[str, ...] = ()
    ok: bool = True


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ToolRefused(_JSON):
    """A tool call the capability layer refused, and why."""

    kind: ClassVar[str] = "tool_refused"
    tool: str
    capability_id: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class GuardDenied(_JSON):
    """An operation a runtime guard refused while the code ran (restricted modes)."""

    kind: ClassVar[str] = "guard_denied"
    guard: str
    detail: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class LimitHit(_JSON):
    """A resource limit the code reached: which one, and its value."""

    kind: ClassVar[str] = "limit_hit"
    limit: str
    value: float


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SyscallKilled(_JSON):
    """The worker killed by ``signal`` for a system call the seccomp filter forbids."""

    kind: ClassVar[str] = "syscall_killed"
    signal: int
    syscall: str = ""


class NetworkVerdict(StrEnum):
    ALLOWED = "allowed"  # opened, and closed by either end
    REFUSED = "refused"  # never reached the upstream (or the upstream could not be reached)
    CUT = "cut"  # opened, then closed by the proxy at a limit


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class NetworkConnection(_JSON):
    """One connection through the session's egress proxy: where to, what it carried, and the
    verdict with the rule and policy key behind it (empty for an allowed connection)."""

    kind: ClassVar[str] = "network_connection"
    host: str
    port: int
    method: str  # CONNECT (TLS passed through) or the HTTP method of a plain request
    verdict: NetworkVerdict
    address: str = ""  # the resolved address the proxy connected to (empty if it did not)
    bytes_sent: int = 0  # from the sandbox to the upstream
    bytes_received: int = 0
    duration_ms: float = 0.0
    rule: str = ""
    key: str = ""
    reason: str = ""


ExecutionEvent = (
    ToolCalled | ToolRefused | GuardDenied | LimitHit | SyscallKilled | NetworkConnection
)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class MimeItem(_JSON):
    """One representation of a rich value (``text/plain``, ``text/html``, ``image/png``, ...).

    The payload is always in ``blob``; ``text`` repeats it inline for a textual type (``text/*``,
    JSON, XML, SVG) of at most 64 KiB, and is empty otherwise.
    """

    media_type: str
    blob: BlobRef
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class DisplayData(_JSON):
    """A rich value as a MIME bundle, like Jupyter's ``display_data`` / ``execute_result``.

    ``items`` always includes ``text/plain`` when the value had a repr; ``truncated`` says that
    representations were left out because they were too big.
    """

    kind: DisplayKind
    items: tuple[MimeItem, ...]
    truncated: bool = False

    def get(self, media_type: str) -> MimeItem | None:
        """The representation of ``media_type``, if the bundle has one."""
        return next((item for item in self.items if item.media_type == media_type), None)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OutputCut(_JSON):
    """What the sandbox's output cap left out of one stream (its middle), counted exactly."""

    omitted_bytes: int
    omitted_lines: int  # newlines in the omitted bytes


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ExecError(_JSON):
    """What the code raised, as a value (Jupyter's ``ename``/``evalue``/``traceback``, E2B's
    ``ExecutionError``): the exception's class name, its message, and its traceback trimmed to
    the model's own frames (:mod:`safeexec._support.tracebacks`), all size-capped."""

    name: str
    value: str
    traceback: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ExecResult(_JSON):
    """What running one request produced. Crashes and timeouts are statuses, not exceptions."""

    status: ExecStatus
    exit_code: int | None
    stdout: BlobRef
    stderr: BlobRef
    truncated: bool = False
    artifacts: tuple[Artifact, ...] = ()
    events: tuple[ExecutionEvent, ...] = ()
    usage: Usage = field(default_factory=Usage)
    message: str = ""
    state_lost: bool = False
    displays: tuple[DisplayData, ...] = ()
    displays_dropped: int = 0  # rich values past the per-call limits, counted only
    stdout_cut: OutputCut | None = None  # set when the output cap cut stdout
    stderr_cut: OutputCut | None = None
    error: ExecError | None = None  # set when the code raised (status error or limit_exceeded)
    # The confinement ladder's rung the code ran on (full, container, unprivileged, minimal);
    # None for modes without a confined worker.
    rung: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class OutputChunk(_JSON):
    """Output a running cell wrote, delivered while it runs (see ``Session.run(on_output=)``).

    ``text`` is decoded UTF-8 with the observation's control escaping applied; the chunks of one
    stream are bounded by the step's ``output_bytes`` (then one marker chunk says the rest is
    not streamed). The step's :class:`ExecResult` still holds the capped full output.
    """

    stream: StreamName
    text: str


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Observation(_JSON):
    """The bounded view of an outcome handed back to the model."""

    text: str
    truncated: bool
    stdout_ref: str | None = None
    stderr_ref: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class AuditEvent(_JSON):
    """One audit-log line per action: enough to replay and to account for every effect.

    ``sequence`` (1, 2, ...) and ``prev_sha256`` (the sha256 of the previous line, or the log's
    genesis value) chain the lines; :class:`~safeexec.audit.log.AuditLog` sets them when it writes.
    """

    schema_version: int = 2
    action_id: str
    session_id: str
    timestamp: str
    language: str
    code_sha256: str
    sandbox_image: str
    sandbox_version: str
    policy_id: str
    policy_digest: str
    verdict: Verdict
    findings: tuple[Finding, ...]
    backend: str
    limits: Limits
    status: ExecStatus | None
    exit_code: int | None
    stdout_ref: str | None
    stderr_ref: str | None
    duration_ms: float
    usage: Usage
    side_effects: tuple[ExecutionEvent, ...]
    artifacts: tuple[Artifact, ...] = ()
    budget: Budget | None = None
    masked_fields: tuple[str, ...] = ()
    environment_ref: str | None = None  # blob:// of the session's environment fingerprint
    seed: int | None = None  # the session's seed for random and numpy.random, if it had one
    error: ExecError | None = None  # what the code raised, if it raised
    rung: str | None = None  # the confinement rung it ran on (None: nothing ran in a worker)
    sequence: int | None = None
    prev_sha256: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Outcome(_JSON):
    """Everything one ``Session.run`` step produced for one action."""

    action: Action
    decision: Decision
    result: ExecResult | None
    observation: Observation
    event: AuditEvent
