"""The host↔worker protocol: one definition per frame, strict on what it reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import safeexec
from safeexec.sandbox.channel import ProtocolError, decode_body, encode_frame
from safeexec.sandbox.protocol import (
    MAX_TRACEBACK_CHARS,
    Claim,
    Display,
    Done,
    Exit,
    Hello,
    Member,
    Op,
    Prepare,
    Prepared,
    ProbeOptions,
    ProbeVerdict,
    Ready,
    Reply,
    Run,
    SessionConfig,
    Setup,
    Spawn,
    Started,
    TemplateOptions,
    ToolCall,
    parse_template_frame,
    parse_worker_frame,
)

CONFIG = SessionConfig(
    workdir="/w",
    env={"PATH": "/usr/bin"},
    memory_bytes=1 << 30,
    cpu_seconds=2.5,
    file_size_bytes=1 << 20,
    max_processes=16,
    max_open_files=64,
    executor="restricted",
    imports=("math",),
    tool_names=("fetch",),
)
FRAMES = [
    Setup(seccomp_program=b"\x06\x00\x00\x00\x00\x00\xff\x7f", syscall_numbers={"capset": 126}),
    Ready(pid=7, preloaded=("numpy",), failed={"scipy": "ImportError"}),
    Spawn(workdir="/w"),
    Member(pid=8),
    Exit(pid=7, status=9),
    Prepare(uid=1600000007, gid=1600000007),
    Prepare(),
    Prepared(root="/mnt"),
    Prepared(),
    Claim(disk=True),
    Claim(),
    Started(pid=7, pidns=4026531836, uid=None),
    CONFIG,
    CONFIG.replace(executor="python", egress_channel=True),
    Hello(layers={"seccomp": {"active": True, "detail": "x"}}),
    Run(code="print(1)"),
    Run(code="print(1)", stream=True),
    ToolCall(name="fetch", args=("a", 1), kwargs={"k": [True, None]}),
    Reply(ok=False, error="refused"),
    Display(kind="result", data={"text/plain": "1"}),
    Display(kind="display", data={"text/plain": "f", "image/png": "iVBORw0K"}, truncated=True),
    Done(ok=True),
    Done(ok=False, error_type="KeyError", error_message="'x'"),
]


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: type(f).__name__)
def test_every_frame_survives_the_wire_unchanged(frame: object) -> None:
    message = frame.to_message()  # type: ignore[attr-defined]
    wire = decode_body(encode_frame(message)[4:])
    assert type(frame).from_message(wire) == frame  # type: ignore[attr-defined]


def test_every_operation_has_a_frame() -> None:
    ops = {frame.to_message()["op"] for frame in FRAMES}  # type: ignore[attr-defined]
    assert ops == {op.value for op in Op}


def test_probe_options_and_verdicts_round_trip_and_reject_junk() -> None:
    options = ProbeOptions(read_only=("/usr",), canary_file="/tmp/c", port=4242, host_pid=9)
    assert ProbeOptions.from_argument(options.to_argument()) == options
    verdict = ProbeVerdict(blocked=True, detail="EACCES")
    assert ProbeVerdict.from_line(verdict.to_line()) == verdict
    with pytest.raises(ProtocolError):
        ProbeOptions.from_argument('{"read_only": [], "canary_file": "/c", "port": "1"}')
    with pytest.raises(ProtocolError):
        ProbeVerdict.from_line('{"blocked": 1, "detail": ""}')  # 1 is not a verdict


@pytest.mark.parametrize("stream", [None, 1, "yes"])
def test_a_run_frame_must_say_whether_to_stream_with_a_bool(stream: object) -> None:
    with pytest.raises(ProtocolError, match="stream"):
        Run.from_message({"op": "run", "code": "1", "stream": stream})


def test_template_options_round_trip_and_reject_junk() -> None:
    options = TemplateOptions(preload=("numpy",), pool_size=4)
    assert TemplateOptions.from_argument(options.to_argument()) == options
    for junk in ("[]", "{not json", '{"preload": "numpy", "pool_size": 1}', '{"preload": []}'):
        with pytest.raises(ProtocolError):
            TemplateOptions.from_argument(junk)


def test_the_setup_frame_round_trips_and_rejects_bad_programs_and_numbers() -> None:
    setup = Setup(seccomp_program=bytes(range(16)), syscall_numbers={"capset": 126})
    assert Setup.from_message(setup.to_message()) == setup
    for junk in (
        {"op": "ready", "seccomp_program": ""},
        {"op": "setup"},
        {"op": "setup", "seccomp_program": "zz"},
        {"op": "setup", "seccomp_program": 7},
        {"op": "setup", "seccomp_program": "", "syscall_numbers": {"capset": True}},
        {"op": "setup", "seccomp_program": "", "syscall_numbers": {"capset": -1}},
        {"op": "setup", "seccomp_program": "", "syscall_numbers": ["capset"]},
    ):
        with pytest.raises(ProtocolError):
            Setup.from_message(junk)


@pytest.mark.parametrize(
    "message",
    [
        {"op": "spawn"},
        {"op": "run", "code": "1"},
        {"op": "nonsense"},
        {},
        {"op": "done"},
        {"op": "done", "ok": "yes"},
        {"op": "done", "ok": False},
        {"op": "done", "ok": False, "error": "boom"},
        {"op": "done", "ok": False, "error": {"type": 1, "message": ""}},
        {"op": "tool", "name": 3, "args": {"args": [], "kwargs": {}}},
        {"op": "tool", "name": "t", "args": [1, 2]},
        {"op": "tool", "name": "t", "args": {"args": {}, "kwargs": {}}},
        {"op": "tool", "name": "t", "args": {"args": [], "kwargs": []}},
        {"op": "display", "kind": "result", "data": {"text/plain": 1}, "truncated": False},
        {"op": "display", "kind": "bogus", "data": {}, "truncated": False},
        {"op": "display", "kind": "display", "data": {"../etc": "x"}, "truncated": False},
        {"op": "display", "kind": "display", "data": {"Text/HTML": "x"}, "truncated": False},
        {"op": "display", "kind": "display", "data": {}, "truncated": "no"},
        {
            "op": "display",
            "kind": "display",
            "data": {f"text/x{i}": "" for i in range(17)},
            "truncated": False,
        },
    ],
)
def test_a_running_cell_may_send_only_well_formed_done_and_tool(message: dict[str, object]) -> None:
    with pytest.raises(ProtocolError):
        parse_worker_frame(message)


def test_the_template_may_send_only_exit_and_member_after_ready() -> None:
    assert parse_template_frame({"op": "member", "pid": 8}) == Member(pid=8)
    assert parse_template_frame({"op": "exit", "pid": 7, "status": 0}) == Exit(pid=7, status=0)
    for junk in ({"op": "ready", "pid": 7}, {"op": "member", "pid": True}, {"op": "member"}, {}):
        with pytest.raises(ProtocolError):
            parse_template_frame(junk)


def test_wrong_field_types_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="'pid'"):
        Started.from_message({"op": "started", "pid": True, "pidns": 1})
    with pytest.raises(ProtocolError, match="'pid'"):
        Exit.from_message({"op": "exit", "pid": "7", "status": 0})
    with pytest.raises(ProtocolError, match="expected a 'config' frame"):
        SessionConfig.from_message({**CONFIG.to_message(), "op": "run"})
    with pytest.raises(ProtocolError, match="'env'"):
        SessionConfig.from_message({**CONFIG.to_message(), "env": {"A": 1}})
    with pytest.raises(ProtocolError, match="'cpu_seconds'"):
        SessionConfig.from_message({**CONFIG.to_message(), "cpu_seconds": True})
    with pytest.raises(ProtocolError, match="'egress_channel'"):
        SessionConfig.from_message({**CONFIG.to_message(), "egress_channel": "yes"})
    with pytest.raises(ProtocolError, match="'layers'"):
        Hello.from_message({"op": "hello", "layers": []})


def test_an_error_report_is_bounded_on_both_ends() -> None:
    long = "t" * 100_000 + "end"
    sent = Done(
        ok=False, error_type="E" * 10_000, error_message="m" * 10_000, error_traceback=long
    ).to_message()
    error = {"type": "E" * 10_000, "message": "m" * 10_000, "traceback": long}
    forged = {"op": "done", "ok": False, "error": error}
    for message in (sent, forged):
        done = Done.from_message(message)
        assert (len(done.error_type), len(done.error_message)) == (200, 2000)
        assert len(done.error_traceback) == MAX_TRACEBACK_CHARS
        assert done.error_traceback.endswith("end")  # the end, where the exception line is
    bare = {"op": "done", "ok": False, "error": {"type": "E", "message": "m"}}
    assert Done.from_message(bare).error_traceback == ""


def test_no_module_builds_a_frame_by_hand() -> None:
    # The wire is defined once: any other module naming an "op" key is a second definition.
    package = Path(safeexec.__file__).parent
    pattern = re.compile(r"""["']op["']\s*[:\]]|\.get\(\s*["']op["']""")
    offenders = [
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "protocol.py" and pattern.search(path.read_text())
    ]
    assert offenders == []


def test_frames_are_frozen_keyword_only_values() -> None:
    # What ``@dataclass(frozen=True, slots=True, kw_only=True)`` gave, without its code
    # generation at import.
    exit_ = Exit(pid=7, status=9)
    assert exit_ == Exit(pid=7, status=9)
    assert exit_ != Exit(pid=7, status=0)
    assert exit_ != Member(pid=7)
    assert hash(exit_) == hash(Exit(pid=7, status=9))
    assert repr(exit_) == "Exit(pid=7, status=9)"
    assert not hasattr(exit_, "__dict__")
    with pytest.raises(AttributeError, match="cannot assign to field 'pid'"):
        exit_.pid = 8  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del exit_.status
    with pytest.raises(TypeError):
        Exit(7, 9)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="missing keyword argument 'status'"):
        Exit(pid=7)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        Exit(pid=7, status=9, extra=1)  # type: ignore[call-arg]


def test_frame_defaults_are_fresh_and_replace_keeps_the_rest() -> None:
    assert Ready(pid=1).failed == {}
    assert Ready(pid=1).failed is not Ready(pid=1).failed
    assert Prepare() == Prepare(uid=None, gid=None)
    moved = CONFIG.replace(workdir="/elsewhere")
    assert moved.workdir == "/elsewhere"
    assert moved.replace(workdir="/w") == CONFIG
    assert Spawn.fds == 4
    assert Spawn.op is Op.SPAWN


def test_the_template_loads_neither_dataclasses_nor_the_codec() -> None:
    # Both load before the first session can start: ``dataclasses`` (with ``inspect``) and its
    # code generation per class were a sixth of the template's imports.
    probe = "import sys, safeexec.sandbox.zygote; print(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    loaded = done.stdout.strip().strip("[]").replace("'", "").split(", ")
    assert "safeexec.sandbox.zygote" in loaded
    assert not {"dataclasses", "inspect", "safeexec.model.codec"} & set(loaded)
