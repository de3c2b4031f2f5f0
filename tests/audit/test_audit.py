"""The audit log: build_event is pure, lines atomic and strict, failures raise, secrets masked."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from safeexec.audit.log import (
    DEFAULT_SECRET_PATTERNS,
    HEAD_SUFFIX,
    MASK,
    AuditLog,
    build_event,
    mask_event,
)
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import (
    Action,
    ActionSource,
    AuditEvent,
    BlobRef,
    Budget,
    Decision,
    Enforcement,
    ExecResult,
    ExecStatus,
    Finding,
    Limits,
    Severity,
    Span,
    ToolCalled,
    ToolRefused,
    Usage,
    Verdict,
)

GOLDEN = Path(__file__).parent.parent / "golden"
NOON = datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)
EMPTY = BlobRef(sha256="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", size=0)


def _action(code: str = "print(6 * 7)\n") -> Action:
    return Action.create(code, source=ActionSource.FENCED, action_id="a-000000000001")


def _finding(**overrides: object) -> Finding:
    values: dict[str, object] = {
        "rule": "SX201",
        "name": "import-outside-allowlist",
        "message": "import of 'os' is not allowed",
        "severity": Severity.HIGH,
        "enforcement": Enforcement.DENY,
        "span": Span(start_line=1, start_column=1, end_line=1, end_column=9),
        "evidence": "import os",
    }
    values.update(overrides)
    return Finding(**values)  # type: ignore[arg-type]


def _result() -> ExecResult:
    stdout = BlobRef(sha256="a" * 64, size=3)
    return ExecResult(
        status=ExecStatus.OK,
        exit_code=0,
        stdout=stdout,
        stderr=EMPTY,
        events=(
            ToolCalled(
                tool="search",
                capability_id="cap-1",
                arguments_sha256="b" * 64,
                result_sha256="c" * 64,
                effects=("network:read",),
            ),
        ),
        usage=Usage(cpu_seconds=0.25, wall_seconds=0.5, max_rss_bytes=1024, output_bytes=3),
        rung="container",
    )


def _allowed() -> Decision:
    return Decision(
        verdict=Verdict.ALLOW,
        backend="native",
        limits=Limits(cpu_seconds=2.0),
        policy_id="default",
        policy_digest="d" * 64,
    )


def _event(**overrides: object) -> AuditEvent:
    event = build_event(
        action=_action(),
        decision=_allowed(),
        result=_result(),
        session_id="s-1",
        timestamp=NOON,
        duration_ms=12.5,
        budget=Budget(steps_left=49, cpu_seconds_left=119.75, tool_calls_left=199),
        sandbox_image="cpython-3.11",
        sandbox_version="0.1.0",
    )
    return dataclasses.replace(event, **overrides)  # type: ignore[arg-type]


def test_build_event_copies_action_decision_and_result() -> None:
    event = _event()
    assert event.action_id == "a-000000000001"
    assert event.code_sha256 == _action().code_sha256
    assert (event.policy_id, event.policy_digest, event.backend) == ("default", "d" * 64, "native")
    assert event.verdict is Verdict.ALLOW
    assert event.limits == Limits(cpu_seconds=2.0)
    assert (event.status, event.exit_code) == (ExecStatus.OK, 0)
    assert event.stdout_ref == "blob://sha256:" + "a" * 64
    assert event.stderr_ref == EMPTY.uri
    assert event.usage.cpu_seconds == 0.25
    assert event.side_effects == _result().events
    assert event.timestamp == "2026-01-02T12:00:00.000000Z"
    assert event.masked_fields == ()
    assert event.rung == "container"  # the confinement rung the code ran on


def test_build_event_matches_the_golden_file_before_it_is_chained() -> None:
    golden = json.loads((GOLDEN / "audit_event.json").read_text())
    unchained = {**golden, "sequence": None, "prev_sha256": None}
    assert _event().to_json() == unchained
    assert AuditEvent.from_json(unchained) == _event()


def test_the_first_line_written_matches_the_golden_file_chained_to_the_genesis(
    tmp_path: Path,
) -> None:
    # The golden file is the first line of a log; its genesis is random, so it reads GENESIS.
    golden = json.loads((GOLDEN / "audit_event.json").read_text())
    with AuditLog(tmp_path / "audit.jsonl") as log:
        log.write(_event())
    (line,) = (tmp_path / "audit.jsonl").read_bytes().splitlines()
    head = json.loads((tmp_path / ("audit.jsonl" + HEAD_SUFFIX)).read_bytes())
    written = json.loads(line)
    assert written["prev_sha256"] == head["genesis"]
    assert {**written, "prev_sha256": "GENESIS"} == golden
    assert head["count"] == 1 and head["last_sha256"] == hashlib.sha256(line).hexdigest()


def test_build_event_for_a_denial_has_no_result_fields() -> None:
    decision = Decision(verdict=Verdict.DENY, findings=(_finding(),), policy_id="default")
    event = build_event(
        action=_action("import os\n"),
        decision=decision,
        result=None,
        session_id="s-1",
        timestamp=NOON,
        duration_ms=0.0,
    )
    assert event.verdict is Verdict.DENY
    assert event.findings == (_finding(),)
    assert (event.status, event.exit_code, event.stdout_ref, event.stderr_ref) == (None,) * 4
    assert event.usage == Usage()
    assert event.side_effects == ()


def test_build_event_writes_any_timezone_as_utc() -> None:
    plus_two = NOON.astimezone(timezone(timedelta(hours=2)))
    event = build_event(
        action=_action(), decision=_allowed(), result=None, session_id="s",
        timestamp=plus_two, duration_ms=1.0,
    )  # fmt: skip
    assert event.timestamp == "2026-01-02T12:00:00.000000Z"


def test_build_event_rejects_a_naive_timestamp() -> None:
    with pytest.raises(ConfigurationError, match="naive"):
        build_event(
            action=_action(), decision=_allowed(), result=None, session_id="s",
            timestamp=datetime(2026, 1, 2), duration_ms=1.0,
        )  # fmt: skip


def test_written_events_read_back_equal_one_json_object_per_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    events = [_event(action_id=f"a-{i}") for i in range(3)]
    with AuditLog(path) as log:
        written = [log.write(event) for event in events]
        assert log.read() == tuple(written)
        assert list(log) == written
    assert [e.sequence for e in written] == [1, 2, 3]
    assert [dataclasses.replace(e, sequence=None, prev_sha256=None) for e in written] == events
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)
    assert [json.loads(line)["action_id"] for line in lines] == ["a-0", "a-1", "a-2"]


def test_the_log_file_is_private_and_appended_across_reopens(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event(action_id="first"))
    with AuditLog(path) as log:
        log.write(_event(action_id="second"))
        assert [e.action_id for e in log.read()] == ["first", "second"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_failed_write_raises_audit_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", disk_full)
    with pytest.raises(AuditError, match=r"cannot write audit event action_id='a-000000000001'"):
        log.write(_event())
    log.close()


def test_a_short_write_raises_and_the_torn_line_is_terminated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    real_write = os.write

    def short_write(fd: int, data: bytes) -> int:
        return real_write(fd, data[:10]) if len(data) > 1 else real_write(fd, data)

    monkeypatch.setattr(os, "write", short_write)
    with pytest.raises(AuditError, match="short write"):
        log.write(_event(action_id="torn"))
    monkeypatch.setattr(os, "write", real_write)
    log.write(_event(action_id="whole"))
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[1])["action_id"] == "whole"
    with pytest.raises(AuditError, match=r"audit.jsonl:1: malformed audit event"):
        log.read()


def test_writing_to_a_closed_log_raises(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.close()
    log.close()
    with pytest.raises(AuditError, match="closed"):
        log.write(_event())


def test_an_event_that_is_not_standard_json_is_refused_not_written(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log, pytest.raises(AuditError, match="cannot encode"):
        log.write(_event(usage=Usage(cpu_seconds=float("nan"))))
    assert path.read_bytes() == b""


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json\n", "malformed audit event"),
        (b"{}\n", "missing field"),
        (b"\n", "malformed audit event"),
    ],
)
def test_reading_is_strict_and_names_the_line(tmp_path: Path, line: bytes, message: str) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event())
    with path.open("ab") as handle:
        handle.write(line)
    with pytest.raises(AuditError, match=rf"audit.jsonl:2: .*{message}"):
        AuditLog(path).read()


def test_reading_rejects_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event())
    data = json.loads(path.read_bytes())
    data["extra"] = 1
    path.write_text(json.dumps(data) + "\n")
    with pytest.raises(AuditError, match="unknown field"):
        AuditLog(path).read()


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    first, second = AuditLog(path), AuditLog(path)
    big = _finding(evidence="x" * 20_000)

    def writer(log: AuditLog, prefix: str) -> None:
        for i in range(40):
            log.write(_event(action_id=f"{prefix}-{i}", findings=(big,)))

    threads = [
        threading.Thread(target=writer, args=(log, f"t{n}"))
        for n, log in enumerate([first, second, first, second])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = first.read()
    assert len(events) == 160
    assert {e.action_id for e in events} == {f"t{n}-{i}" for n in range(4) for i in range(40)}
    assert first.statistics().events_written + second.statistics().events_written == 160


def test_fsync_mode_syncs_every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    data_synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    monkeypatch.setattr(os, "fdatasync", data_synced.append)
    with AuditLog(tmp_path / "audit.jsonl", fsync=True) as log:
        log.write(_event())
        log.write(_event())
    # The new head and its directory entry, then each line; each head rewritten in place.
    assert (len(synced), len(data_synced)) == (2 + 2, 2)


def test_an_unopenable_path_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigurationError, match="cannot open audit log directory="):
        AuditLog(blocker / "audit.jsonl")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "audit.jsonl").mkdir()
    with pytest.raises(ConfigurationError, match="cannot open audit log path="):
        AuditLog(tmp_path / "real" / "audit.jsonl")


def test_an_invalid_secret_pattern_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"invalid secret pattern='\('"):
        AuditLog(tmp_path / "audit.jsonl", mask_patterns=("(",))


SECRETS = [
    ("sk-proj-abcdefghijklmnop1234", MASK),
    ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAA", MASK),
    ("AKIAIOSFODNN7EXAMPLE", MASK),
    ("ghp_" + "a1B2" * 9, MASK),
    ("github_pat_" + "Z" * 30, MASK),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", f"Authorization: Bearer {MASK}"),
    ("password=hunter2", f"password={MASK}"),
    ("db_password = 'hunter2'", f"db_password = '{MASK}'"),
    ("API_KEY: abc123xyz", f"API_KEY: {MASK}"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", MASK),
]


@pytest.mark.parametrize(("secret", "expected"), SECRETS)
def test_default_patterns_mask_common_secrets(secret: str, expected: str) -> None:
    event = _event(findings=(_finding(evidence=f"x = {secret!s}"),))
    masked = mask_event(event)
    assert masked.findings[0].evidence == f"x = {expected}"
    assert masked.masked_fields == ("findings[0].evidence",)
    assert secret not in json.dumps(masked.to_json()) or secret == expected


def test_masking_records_every_masked_field_path(tmp_path: Path) -> None:
    refused = ToolRefused(tool="http", capability_id="c", reason="token=s3cr3tvalue refused")
    event = _event(
        findings=(_finding(), _finding(message="uses AKIAIOSFODNN7EXAMPLE")),
        side_effects=(refused,),
    )
    with AuditLog(tmp_path / "audit.jsonl") as log:
        written = log.write(event)
        (stored,) = log.read()
        assert log.statistics().events_masked == 1
    assert stored == written
    assert stored.masked_fields == ("findings[1].message", "side_effects[0].reason")
    assert "AKIAIOSFODNN7EXAMPLE" not in (tmp_path / "audit.jsonl").read_text()
    assert "s3cr3tvalue" not in (tmp_path / "audit.jsonl").read_text()


def test_masking_leaves_ordinary_text_hashes_and_enums_alone() -> None:
    event = _event(
        findings=(_finding(message="task-scheduler-abcdefghijklmnop ran; ask-me later"),),
    )
    assert mask_event(event) is event
    custom = mask_event(event, ("^allow$", "native"))
    assert custom.verdict is Verdict.ALLOW
    assert custom.backend == MASK
    assert custom.masked_fields == ("backend",)


def test_custom_patterns_replace_the_defaults(tmp_path: Path) -> None:
    assert "sk-" in DEFAULT_SECRET_PATTERNS[0]
    event = _event(findings=(_finding(evidence="corp-secret-42 and AKIAIOSFODNN7EXAMPLE"),))
    with AuditLog(tmp_path / "audit.jsonl", mask_patterns=(r"corp-secret-\d+",)) as log:
        written = log.write(event)
    assert written.findings[0].evidence == f"{MASK} and AKIAIOSFODNN7EXAMPLE"


def test_masking_is_idempotent_and_merges_earlier_masked_fields() -> None:
    once = mask_event(_event(findings=(_finding(evidence="password=x1"),)))
    twice = mask_event(
        dataclasses.replace(once, findings=(*once.findings, _finding(message="pwd=y")))
    )
    assert twice.masked_fields == ("findings[0].evidence", "findings[1].message")
    assert mask_event(once) is once


def test_public_exports_are_pinned() -> None:
    import safeexec.audit.log as audit

    assert audit.__all__ == [
        "DEFAULT_SECRET_PATTERNS", "HEAD_SUFFIX", "MASK", "AuditLog", "AuditStatistics",
        "LogVerification", "build_event", "mask_event", "read_log", "verify_log",
    ]  # fmt: skip


def _append_from_another_process(path: str, prefix: str) -> None:
    with AuditLog(Path(path)) as log:
        for i in range(25):
            log.write(
                _event(action_id=f"{prefix}-{i}", findings=(_finding(evidence="y" * 50_000),))
            )


def test_processes_sharing_one_log_never_tear_each_others_lines(tmp_path: Path) -> None:
    import multiprocessing

    path = tmp_path / "audit.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_append_from_another_process, args=(str(path), f"p{n}"))
        for n in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    events = AuditLog(path).read()
    assert sorted(e.action_id for e in events) == sorted(
        f"p{n}-{i}" for n in range(3) for i in range(25)
    )
