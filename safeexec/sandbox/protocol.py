"""The one definition of what host, template and worker say to each other.

Every frame on the three channels is a JSON object with an ``op`` (see :class:`Op`) and is built
and parsed here, by both ends: the sender calls ``to_message()``, the receiver
``Frame.from_message()``, which raises :class:`~safeexec.sandbox.channel.ProtocolError` for an
unexpected operation or a field of the wrong type. The host reads the worker's frames as
untrusted input (the code owns that process), so nothing here trusts a field it did not check.

Channels and the frames on them, in the order they are sent:

* host → template (command line): :class:`TemplateOptions`;
* host ↔ template (control socket): ``setup`` (host, first, while the template boots),
  ``ready`` (template, once), ``member`` (template, per warm
  session process it forks ahead, for the host to move into a cgroup), ``spawn`` (host, with the
  session's channel, stdout and stderr descriptors and the workdir's mount, if any), ``exit``
  (template, per reaped session);
* template ↔ session process (its pool socket): ``prepare`` (template, after the fork: the
  identity to take), ``prepared`` (session process: confined or not), ``claim`` (template,
  with the host's descriptors);
* host → layer probe (command line, ``safeexec doctor`` only): :class:`ProbeOptions`, and the
  probe's last output line back: :class:`ProbeVerdict`;
* host ↔ session (the session's channel): ``started`` (template, with the worker's pidfd),
  ``config`` (host: :class:`SessionConfig`), ``hello`` (worker, its layer report), then per call
  ``run`` (host), any number of ``tool`` (worker) each answered by ``reply`` (host) and of
  ``display`` (worker: a rich value, unanswered), and ``done`` (worker).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

from safeexec.sandbox.channel import ProtocolError
from safeexec.sandbox.record import Record, default

if TYPE_CHECKING:
    from safeexec.model.codec import JSONValue

__all__ = [
    "MAX_DISPLAY_ITEMS",
    "Claim",
    "Display",
    "Done",
    "Exit",
    "Hello",
    "Member",
    "Op",
    "Prepare",
    "Prepared",
    "ProbeOptions",
    "ProbeVerdict",
    "Ready",
    "Reply",
    "Run",
    "SessionConfig",
    "Setup",
    "Spawn",
    "Started",
    "TemplateOptions",
    "ToolCall",
    "is_textual",
    "parse_template_frame",
    "parse_worker_frame",
]

_MAX_ERROR_TYPE_CHARS = 200
MAX_DISPLAY_ITEMS = 16
"""Representations per ``display`` frame (one per media type)."""
# type/subtype as RFC 6838 names them, lower case (what _repr_mimebundle_ and Jupyter use).
_MEDIA_TYPE = re.compile(r"[a-z][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")
_MAX_ERROR_MESSAGE_CHARS = 2000
MAX_TRACEBACK_CHARS = 16 * 1024
"""The most of a raised exception's traceback text a ``done`` frame carries (its end is kept)."""


class Op(StrEnum):
    """Every operation a frame can carry."""

    SETUP = "setup"
    READY = "ready"
    MEMBER = "member"
    SPAWN = "spawn"
    EXIT = "exit"
    PREPARE = "prepare"
    PREPARED = "prepared"
    CLAIM = "claim"
    STARTED = "started"
    CONFIG = "config"
    HELLO = "hello"
    RUN = "run"
    TOOL = "tool"
    REPLY = "reply"
    DISPLAY = "display"
    DONE = "done"


_T = TypeVar("_T")


def _expect_op(message: Mapping[str, object], op: Op) -> None:
    got = message.get("op")
    if got != op.value:
        raise ProtocolError(f"expected a {op.value!r} frame, got op={str(got)[:50]!r}")


def _field(message: Mapping[str, object], name: str, kind: type[_T]) -> _T:
    value = message.get(name)
    # bool is an int subclass: a count or a pid must not be True.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"frame field {name!r} is not a {kind.__name__}")
    return value


def _optional_int(message: Mapping[str, object], name: str) -> int | None:
    return None if message.get(name) is None else _field(message, name, int)


def _strings(message: Mapping[str, object], name: str) -> tuple[str, ...]:
    values = message.get(name, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ProtocolError(f"frame field {name!r} is not a list of strings")
    return tuple(values)


def _string_map(message: Mapping[str, object], name: str) -> dict[str, str]:
    values = message.get(name, {})
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ProtocolError(f"frame field {name!r} is not an object of strings")
    return dict(values)


# -- host ↔ template ------------------------------------------------------------------------


class TemplateOptions(Record):
    """How the host starts the template: the command-line argument after the control fd."""

    preload: tuple[str, ...] = ()  # modules imported once, shared by every session
    pool_size: int = 0  # session processes kept forked ahead

    def to_argument(self) -> str:
        return json.dumps({"preload": list(self.preload), "pool_size": self.pool_size})

    @classmethod
    def from_argument(cls, text: str) -> TemplateOptions:
        message = _json_object(text, "template options")
        return cls(
            preload=_strings(message, "preload"),
            pool_size=max(0, _field(message, "pool_size", int)),
        )


class Setup(Record):
    """The host's first frame to the template, sent while it boots: the seccomp filter the host
    compiled and the numbers of the syscalls the sandbox side calls (libseccomp's work, done by
    the host so that the template never loads it; :mod:`safeexec.sandbox.syscalls`)."""

    op: ClassVar[Op] = Op.SETUP
    seccomp_program: bytes  # the compiled classic-BPF filter every session loads
    syscall_numbers: Mapping[str, int] = default(default_factory=dict)

    def to_message(self) -> dict[str, object]:
        return {
            "op": self.op.value,
            "seccomp_program": self.seccomp_program.hex(),
            "syscall_numbers": dict(self.syscall_numbers),
        }

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Setup:
        _expect_op(message, cls.op)
        numbers = message.get("syscall_numbers", {})
        if not isinstance(numbers, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numbers.values()
        ):
            raise ProtocolError("frame field 'syscall_numbers' is not an object of numbers")
        try:
            program = bytes.fromhex(_field(message, "seccomp_program", str))
        except ValueError:
            raise ProtocolError("frame field 'seccomp_program' is not hexadecimal") from None
        return cls(seccomp_program=program, syscall_numbers=dict(numbers))


class Ready(Record):
    """The template is serving: its pid as the host sees it, and what it preloaded."""

    op: ClassVar[Op] = Op.READY
    pid: int
    preloaded: tuple[str, ...] = ()
    failed: Mapping[str, str] = default(default_factory=dict)

    def to_message(self) -> dict[str, object]:
        return {
            "op": self.op.value,
            "pid": self.pid,
            "preloaded": list(self.preloaded),
            "failed": dict(self.failed),
        }

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Ready:
        _expect_op(message, cls.op)
        return cls(
            pid=_field(message, "pid", int),
            preloaded=_strings(message, "preloaded"),
            failed=_string_map(message, "failed"),
        )


class Spawn(Record):
    """Host to template: start a session on the descriptors attached to this frame.

    Three or four: the session's channel, stdout and stderr, and the host's detached,
    size-bounded mount for the workdir when it has one. ``workdir`` is the host's path of the
    workdir (no secret: the template binds it into a pre-confined session's view when no mount
    comes with the frame).
    """

    op: ClassVar[Op] = Op.SPAWN
    fds: ClassVar[int] = 4  # at most
    workdir: str

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "workdir": self.workdir}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Spawn:
        _expect_op(message, cls.op)
        workdir = _field(message, "workdir", str)
        if not workdir.startswith("/"):
            raise ProtocolError("frame field 'workdir' is not an absolute path")
        return cls(workdir=workdir)


class Exit(Record):
    """Template to host: a session process it reaped, with its wait status."""

    op: ClassVar[Op] = Op.EXIT
    pid: int
    status: int

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "pid": self.pid, "status": self.status}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Exit:
        _expect_op(message, cls.op)
        return cls(pid=_field(message, "pid", int), status=_field(message, "status", int))


class Member(Record):
    """Template to host: a warm session process it forked ahead (not yet claimed), by its pid
    as the host sees it, so the host can move it into a cgroup of its own before any claim."""

    op: ClassVar[Op] = Op.MEMBER
    pid: int

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "pid": self.pid}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Member:
        _expect_op(message, cls.op)
        return cls(pid=_field(message, "pid", int))


def parse_template_frame(message: Mapping[str, object]) -> Exit | Member:
    """A frame on the control socket after ``ready``: ``exit`` or ``member``, else an error."""
    op = message.get("op")
    if op == Op.EXIT.value:
        return Exit.from_message(message)
    if op == Op.MEMBER.value:
        return Member.from_message(message)
    raise ProtocolError(f"the template may send 'exit' or 'member', not op={str(op)[:50]!r}")


# -- template → session process ---------------------------------------------------------------


class Prepare(Record):
    """Template to a pooled session process, once, right after the fork: confine yourself now.

    ``uid``/``gid`` are set when the host runs as root: the unprivileged identity to become.
    """

    op: ClassVar[Op] = Op.PREPARE
    uid: int | None = None
    gid: int | None = None

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "uid": self.uid, "gid": self.gid}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Prepare:
        _expect_op(message, cls.op)
        return cls(uid=_optional_int(message, "uid"), gid=_optional_int(message, "gid"))


class Prepared(Record):
    """Pooled session process to template, before any claim: whether it confined itself.

    ``root`` is where its private root lies in its own mount namespace (the template attaches
    the claiming session's workdir beneath it); None: not confined yet, it will be after the
    claim, with the workdir mount (if any) attached to the ``claim`` frame.
    """

    op: ClassVar[Op] = Op.PREPARED
    root: str | None = None

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "root": self.root}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Prepared:
        _expect_op(message, cls.op)
        root = None if message.get("root") is None else _field(message, "root", str)
        if root is not None and not root.startswith("/"):
            raise ProtocolError("frame field 'root' is not an absolute path")
        return cls(root=root)


class Claim(Record):
    """Template to a pooled session process: serve the host on the attached descriptors.

    Three or four: the session's channel, stdout, stderr and, for a process not yet confined,
    the host's detached workdir mount if it sent one. ``disk`` says whether the workdir is
    such a mount (for a pre-confined process the template has attached it already).
    """

    op: ClassVar[Op] = Op.CLAIM
    fds: ClassVar[int] = 4  # at most
    disk: bool = False
    # Non-empty on a root host where the session cannot take a uid of its own: why (it then
    # keeps the host's uid, without capabilities).
    uid_refused: str = ""

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "disk": self.disk, "uid_refused": self.uid_refused}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Claim:
        _expect_op(message, cls.op)
        return cls(
            disk=_field(message, "disk", bool), uid_refused=_field(message, "uid_refused", str)
        )


# -- host ↔ session ---------------------------------------------------------------------------


class Started(Record):
    """Template to host, first on a session's channel, with the worker's pidfd attached."""

    op: ClassVar[Op] = Op.STARTED
    pid: int  # as the host sees it
    pidns: int  # the inode of the worker's pid namespace
    uid: int | None = None  # the session's own uid on a root host

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "pid": self.pid, "pidns": self.pidns, "uid": self.uid}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Started:
        _expect_op(message, cls.op)
        return cls(
            pid=_field(message, "pid", int),
            pidns=_field(message, "pidns", int),
            uid=_optional_int(message, "uid"),
        )


class SessionConfig(Record):
    """What the host asks of one session: built on the host, read by the session process.

    Sent straight to the session on its own channel, never through the template (whatever the
    template reads stays in the heap every later session inherits). The limits here are the
    session's rlimits, fixed for its life; per-call limits travel with each request.
    """

    workdir: str
    env: Mapping[str, str]
    memory_bytes: int
    cpu_seconds: float
    file_size_bytes: int
    max_processes: int
    max_open_files: int
    executor: str = "python"
    imports: tuple[str, ...] = ()
    tool_names: tuple[str, ...] = ()
    workdir_symlinks: bool = False
    seed: int | None = None  # for random and numpy.random, before the first cell
    # Classic BPF refusing what this session's rung cannot count (seccomp.RUNG_CLASSES),
    # loaded after every other layer; empty when nothing is left to refuse.
    rung_filter: bytes = b""
    # The frame carries one descriptor: the unix channel to the session's egress proxy (see
    # sandbox/egress_client.py); the session's TCP sockets go there and nowhere else.
    egress_channel: bool = False

    def to_message(self) -> dict[str, object]:
        """The ``config`` frame."""
        return {
            "op": Op.CONFIG.value,
            "workdir": self.workdir,
            "env": dict(self.env),
            "memory_bytes": self.memory_bytes,
            "cpu_seconds": self.cpu_seconds,
            "file_size_bytes": self.file_size_bytes,
            "max_processes": self.max_processes,
            "max_open_files": self.max_open_files,
            "executor": self.executor,
            "imports": list(self.imports),
            "tool_names": list(self.tool_names),
            "workdir_symlinks": self.workdir_symlinks,
            "seed": self.seed,
            "rung_filter": self.rung_filter.hex(),
            "egress_channel": self.egress_channel,
        }

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> SessionConfig:
        """Parse a ``config`` frame; ``ProtocolError`` if it is anything else."""
        _expect_op(message, Op.CONFIG)
        cpu = message.get("cpu_seconds")
        if isinstance(cpu, bool) or not isinstance(cpu, int | float):
            raise ProtocolError("frame field 'cpu_seconds' is not a number")
        try:
            rung_filter = bytes.fromhex(_field(message, "rung_filter", str))
        except ValueError:
            raise ProtocolError("frame field 'rung_filter' is not hexadecimal") from None
        return cls(
            workdir=_field(message, "workdir", str),
            env=_string_map(message, "env"),
            memory_bytes=_field(message, "memory_bytes", int),
            cpu_seconds=float(cpu),
            file_size_bytes=_field(message, "file_size_bytes", int),
            max_processes=_field(message, "max_processes", int),
            max_open_files=_field(message, "max_open_files", int),
            executor=_field(message, "executor", str),
            imports=_strings(message, "imports"),
            tool_names=_strings(message, "tool_names"),
            workdir_symlinks=_field(message, "workdir_symlinks", bool),
            seed=_optional_int(message, "seed"),
            rung_filter=rung_filter,
            egress_channel=_field(message, "egress_channel", bool),
        )


class Hello(Record):
    """Worker to host once confined: the layer report (checked by the host, see ``layers``)."""

    op: ClassVar[Op] = Op.HELLO
    layers: Mapping[str, object]

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "layers": dict(self.layers)}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Hello:
        _expect_op(message, cls.op)
        return cls(layers=_field(message, "layers", dict))


class Run(Record):
    """Host to worker: run one cell; ``stream`` asks for each line to be flushed as written.

    Output itself never travels as frames: stdout and stderr are the worker's own descriptors
    (pipes the host reads, caps and streams), so C code and subprocesses are streamed too.
    """

    op: ClassVar[Op] = Op.RUN
    code: str
    stream: bool = False

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "code": self.code, "stream": self.stream}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Run:
        _expect_op(message, cls.op)
        return cls(code=_field(message, "code", str), stream=_field(message, "stream", bool))


class ToolCall(Record):
    """Worker to host mid-run: call granted tool ``name``; answered by one :class:`Reply`."""

    op: ClassVar[Op] = Op.TOOL
    name: str
    args: tuple[JSONValue, ...] = ()
    kwargs: Mapping[str, JSONValue] = default(default_factory=dict)

    def to_message(self) -> dict[str, object]:
        return {
            "op": self.op.value,
            "name": self.name,
            "args": {"args": list(self.args), "kwargs": dict(self.kwargs)},
        }

    def arguments(self) -> JSONValue:
        """The arguments as the tool gateway takes them."""
        return {"args": list(self.args), "kwargs": dict(self.kwargs)}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> ToolCall:
        _expect_op(message, cls.op)
        arguments = _field(message, "args", dict)
        args, kwargs = arguments.get("args", []), arguments.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ProtocolError("tool arguments must be {'args': [...], 'kwargs': {...}}")
        return cls(name=_field(message, "name", str), args=tuple(args), kwargs=kwargs)


class Reply(Record):
    """Host to worker: the answer to one :class:`ToolCall`."""

    op: ClassVar[Op] = Op.REPLY
    ok: bool
    value: JSONValue = None
    error: str = ""

    def to_message(self) -> dict[str, object]:
        return {"op": self.op.value, "ok": self.ok, "value": self.value, "error": self.error}

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Reply:
        _expect_op(message, cls.op)
        return cls(
            ok=_field(message, "ok", bool),
            value=cast("JSONValue", message.get("value")),  # decoded JSON is a JSONValue
            error=_field(message, "error", str),
        )


class Display(Record):
    """Worker to host mid-run: a rich value as a MIME bundle (``kind`` ``result`` or ``display``).

    ``data`` maps media types to payloads: text as is, binary types (see :func:`is_textual`)
    base64-encoded, as Jupyter sends them. ``truncated``: the worker left representations out.
    """

    op: ClassVar[Op] = Op.DISPLAY
    kind: str
    data: Mapping[str, str]
    truncated: bool = False

    def to_message(self) -> dict[str, object]:
        return {
            "op": self.op.value,
            "kind": self.kind,
            "data": dict(self.data),
            "truncated": self.truncated,
        }

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Display:
        _expect_op(message, cls.op)
        kind = _field(message, "kind", str)
        if kind not in ("result", "display"):
            raise ProtocolError(
                f"a display frame's kind is 'result' or 'display', not {kind[:20]!r}"
            )
        data = _string_map(message, "data")
        if len(data) > MAX_DISPLAY_ITEMS:
            raise ProtocolError(f"a display frame carries at most {MAX_DISPLAY_ITEMS} media types")
        for media_type in data:
            if not _MEDIA_TYPE.fullmatch(media_type):
                raise ProtocolError(f"{media_type[:80]!r} is not a media type")
        return cls(kind=kind, data=data, truncated=_field(message, "truncated", bool))


def is_textual(media_type: str) -> bool:
    """Is a payload of ``media_type`` sent as text (else as base64)? As Jupyter decides."""
    return (
        media_type.startswith("text/")
        or media_type in ("application/json", "application/javascript", "image/svg+xml")
        or media_type.endswith(("+json", "+xml"))
    )


class Done(Record):
    """Worker to host: the cell finished; if it raised, the exception's type, message and
    trimmed traceback (its last :data:`MAX_TRACEBACK_CHARS` characters)."""

    op: ClassVar[Op] = Op.DONE
    ok: bool
    error_type: str = ""
    error_message: str = ""
    error_traceback: str = ""

    def to_message(self) -> dict[str, object]:
        message: dict[str, object] = {"op": self.op.value, "ok": self.ok}
        if not self.ok:
            message["error"] = {
                "type": self.error_type[:_MAX_ERROR_TYPE_CHARS],
                "message": self.error_message[:_MAX_ERROR_MESSAGE_CHARS],
                "traceback": self.error_traceback[-MAX_TRACEBACK_CHARS:],
            }
        return message

    @classmethod
    def from_message(cls, message: Mapping[str, object]) -> Done:
        _expect_op(message, cls.op)
        ok = _field(message, "ok", bool)
        if ok:
            return cls(ok=True)
        error = _field(message, "error", dict)
        return cls(
            ok=False,
            error_type=_field(error, "type", str)[:_MAX_ERROR_TYPE_CHARS] or "Error",
            error_message=_field(error, "message", str)[:_MAX_ERROR_MESSAGE_CHARS],
            # Optional: a report without one is still a report of what was raised.
            error_traceback=(
                _field(error, "traceback", str)[-MAX_TRACEBACK_CHARS:]
                if "traceback" in error
                else ""
            ),
        )


# -- host → layer probe (``safeexec doctor``) ----------------------------------------------------


class ProbeOptions(Record):
    """What a single-layer probe (``safeexec.sandbox.probe``) tries to reach: its argument."""

    read_only: tuple[str, ...]  # the runtime paths Landlock leaves readable
    canary_file: str  # a world-readable file outside them
    port: int  # a listening loopback TCP port of the host
    host_pid: int  # a process outside the probe's Landlock domain

    def to_argument(self) -> str:
        return json.dumps(
            {
                "read_only": list(self.read_only),
                "canary_file": self.canary_file,
                "port": self.port,
                "host_pid": self.host_pid,
            }
        )

    @classmethod
    def from_argument(cls, text: str) -> ProbeOptions:
        message = _json_object(text, "probe options")
        return cls(
            read_only=_strings(message, "read_only"),
            canary_file=_field(message, "canary_file", str),
            port=_field(message, "port", int),
            host_pid=_field(message, "host_pid", int),
        )


class ProbeVerdict(Record):
    """What a probe prints as its last line: did the layer block what it tried, and how."""

    blocked: bool
    detail: str

    def to_line(self) -> str:
        return json.dumps({"blocked": self.blocked, "detail": self.detail})

    @classmethod
    def from_line(cls, text: str) -> ProbeVerdict:
        message = _json_object(text, "probe verdict")
        return cls(blocked=_field(message, "blocked", bool), detail=_field(message, "detail", str))


def _json_object(text: str, what: str) -> dict[str, object]:
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        raise ProtocolError(f"the {what} are not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"the {what} are not a JSON object")
    return message


def parse_worker_frame(message: Mapping[str, object]) -> Done | ToolCall | Display:
    """A frame from a running cell: ``done``, ``tool`` or ``display``; else a ``ProtocolError``."""
    op = message.get("op")
    if op == Op.DONE.value:
        return Done.from_message(message)
    if op == Op.TOOL.value:
        return ToolCall.from_message(message)
    if op == Op.DISPLAY.value:
        return Display.from_message(message)
    raise ProtocolError(
        f"a running cell may send 'done', 'tool' or 'display', not op={str(op)[:50]!r}"
    )
