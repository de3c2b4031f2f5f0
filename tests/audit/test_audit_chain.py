"""The audit log is tamper-evident (issue 10 item 2): each attack is detected, by read and verify.

Each test tampers the way the red team did (or a variant) and expects ``AuditLog.read()``,
:func:`verify_log` and ``safeexec log verify`` to report it, or the next ``write`` to raise.
On main every one of them passed silently.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.audit.log import HEAD_SUFFIX, AuditLog, build_event, verify_log
from safeexec.cli.app import app
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import (
    Action,
    ActionSource,
    AuditEvent,
    Decision,
    Enforcement,
    Finding,
    Severity,
    Verdict,
)

NOON = datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)
DENIAL = Finding(
    rule="SX201",
    name="import-outside-allowlist",
    message="import of 'subprocess' is not allowed",
    severity=Severity.HIGH,
    enforcement=Enforcement.DENY,
)


def _event(action_id: str, verdict: Verdict = Verdict.ALLOW) -> AuditEvent:
    findings = (DENIAL,) if verdict is Verdict.DENY else ()
    return build_event(
        action=Action.create("print(1)\n", source=ActionSource.FENCED, action_id=action_id),
        decision=Decision(verdict=verdict, findings=findings, policy_id="default"),
        result=None,
        session_id="s-1",
        timestamp=NOON,
        duration_ms=1.0,
    )


def _log(state: Path, count: int = 4) -> Path:
    """A log of ``count`` events, the second a denial; returns its path."""
    path = state / "audit.jsonl"
    with AuditLog(path) as log:
        for i in range(count):
            log.write(_event(f"a-{i}", Verdict.DENY if i == 1 else Verdict.ALLOW))
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _cli_verify(state: Path) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["log", "verify", str(state)])
    return done.exit_code, done.output


def _assert_detected(state: Path, reason: str) -> None:
    with pytest.raises(AuditError, match=reason):
        AuditLog(state / "audit.jsonl").read()
    report = verify_log(state)
    assert not report.ok and report.events == 0
    assert __import__("re").search(reason, report.reason), report.reason
    code, output = _cli_verify(state)
    assert code == 1
    (line,) = output.strip().splitlines()  # one line saying why
    assert line.startswith("safeexec: log verify: ")


def test_an_intact_log_verifies(tmp_path: Path) -> None:
    _log(tmp_path)
    report = verify_log(tmp_path)
    assert (report.ok, report.events, report.reason) == (True, 4, "intact")
    code, output = _cli_verify(tmp_path)
    assert code == 0 and "4 events, chain intact" in output
    events = AuditLog(tmp_path / "audit.jsonl").read()
    assert [e.sequence for e in events] == [1, 2, 3, 4]


def test_an_empty_log_verifies_and_a_missing_one_does_not(tmp_path: Path) -> None:
    AuditLog(tmp_path / "audit.jsonl").close()
    assert verify_log(tmp_path).ok
    report = verify_log(tmp_path / "nowhere")
    assert not report.ok and "cannot open the audit log directory" in report.reason


# -- rewriting, deleting, reordering, truncating, swapping ----------------------------------------


def _rewrite_deny_as_allow(path: Path) -> None:
    lines = _lines(path)
    data = json.loads(lines[1])
    assert data["verdict"] == "deny"
    data["verdict"], data["findings"] = "allow", []
    lines[1] = (json.dumps(data) + "\n").encode()
    path.write_bytes(b"".join(lines))


def _rewrite_the_last_event(path: Path) -> None:
    lines = _lines(path)
    lines[-1] = lines[-1].replace(b'"s-1"', b'"s-2"')
    path.write_bytes(b"".join(lines))


def _delete_an_event(path: Path) -> None:
    lines = _lines(path)
    del lines[1]
    path.write_bytes(b"".join(lines))


def _reorder(path: Path) -> None:
    lines = _lines(path)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"".join(lines))


def _truncate(path: Path) -> None:
    path.write_bytes(b"".join(_lines(path)[:-1]))


def _truncate_to_nothing(path: Path) -> None:
    path.write_bytes(b"")


def _append_a_forged_event(path: Path) -> None:
    lines = _lines(path)
    last = json.loads(lines[-1])
    forged = {**last, "sequence": last["sequence"] + 1, "action_id": "forged"}
    forged["prev_sha256"] = hashlib.sha256(lines[-1][:-1]).hexdigest()
    path.write_bytes(b"".join(lines) + (json.dumps(forged) + "\n").encode())


def _swap_in_another_log(path: Path) -> None:
    other = path.parent / "other"
    other.mkdir(mode=0o700)
    _log(other)
    os.replace(other / "audit.jsonl", path)


def _delete_the_head(path: Path) -> None:
    (path.parent / (path.name + HEAD_SUFFIX)).unlink()


TAMPERING: list[tuple[Callable[[Path], None], str]] = [
    (_rewrite_deny_as_allow, r"audit.jsonl:3: prev_sha256 does not match line 2's hash"),
    (_rewrite_the_last_event, r"the last event does not match the chain head"),
    (_delete_an_event, r"audit.jsonl:2: sequence=3 where 2 belongs"),
    (_reorder, r"audit.jsonl:2: sequence=3 where 2 belongs"),
    (_truncate, r"holds 3 events .* chain head says 4"),
    (_truncate_to_nothing, r"holds 0 events .* chain head says 4"),
    (_append_a_forged_event, r"holds 5 events .* chain head says 4"),
    (_swap_in_another_log, r"audit.jsonl:1: prev_sha256 does not match this log's genesis"),
    (_delete_the_head, r"has no chain head"),
]


@pytest.mark.parametrize(("tamper", "reason"), TAMPERING, ids=[t.__name__ for t, _ in TAMPERING])
def test_tampering_is_detected_by_read_verify_and_the_cli(
    tmp_path: Path, tamper: Callable[[Path], None], reason: str
) -> None:
    tamper(_log(tmp_path))
    _assert_detected(tmp_path, reason)


# A writer checks the end of the log (its size and last line) before extending it, not the whole
# chain (that is read's and verify's job, O(log)): a same-size reordering in the middle is not seen.
ENDS_CHANGED = [(t, r) for t, r in TAMPERING if t is not _reorder]


@pytest.mark.parametrize(
    ("tamper", "reason"), ENDS_CHANGED, ids=[t.__name__ for t, _ in ENDS_CHANGED]
)
def test_a_log_whose_end_was_tampered_with_is_never_extended(
    tmp_path: Path, tamper: Callable[[Path], None], reason: str
) -> None:
    tamper(_log(tmp_path))
    with pytest.raises(AuditError), AuditLog(tmp_path / "audit.jsonl") as log:
        log.write(_event("after"))
    assert b'"after"' not in (tmp_path / "audit.jsonl").read_bytes()


def test_a_forger_who_recomputes_the_whole_chain_is_caught_by_the_head(tmp_path: Path) -> None:
    path = _log(tmp_path)
    previous = json.loads((tmp_path / ("audit.jsonl" + HEAD_SUFFIX)).read_bytes())["genesis"]
    forged = []
    for number, raw in enumerate(_lines(path), start=1):
        data = json.loads(raw)
        if number == 2:
            data["verdict"], data["findings"] = "allow", []
        data["prev_sha256"] = previous
        line = json.dumps(data).encode()
        previous = hashlib.sha256(line).hexdigest()
        forged.append(line + b"\n")
    path.write_bytes(b"".join(forged))  # a consistent chain, every link recomputed
    _assert_detected(tmp_path, r"holds 4 events \(\d+ bytes\) but its chain head says 4 \(\d+")


def test_a_forger_who_also_rewrites_the_head_is_not_caught(tmp_path: Path) -> None:
    # The known limit: whoever can write the state dir can write both. Only the state dir being
    # the host's alone (tests/escapes/test_state_dir_*) keeps a session from being that someone.
    path = _log(tmp_path)
    head_path = tmp_path / ("audit.jsonl" + HEAD_SUFFIX)
    head = json.loads(head_path.read_bytes())
    previous, forged = head["genesis"], []
    for raw in _lines(path)[:1] + _lines(path)[2:]:
        data = json.loads(raw)
        data["sequence"], data["prev_sha256"] = len(forged) + 1, previous
        line = json.dumps(data).encode()
        previous = hashlib.sha256(line).hexdigest()
        forged.append(line + b"\n")
    path.write_bytes(b"".join(forged))
    head.update(count=3, last_sha256=previous, size_bytes=len(b"".join(forged)))
    head_path.write_text(json.dumps(head))
    assert verify_log(tmp_path).ok


# -- the writer's own guards: unlinked, replaced, truncated under it ------------------------------


def test_an_append_after_the_log_was_unlinked_raises(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event("first"))
        path.unlink()
        with pytest.raises(AuditError, match="was unlinked before appending"):
            log.write(_event("lost"))


def test_an_append_after_the_log_was_swapped_for_a_symlink_raises(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    elsewhere = tmp_path / "elsewhere.jsonl"
    with AuditLog(path) as log:
        log.write(_event("first"))
        (tmp_path / "link").symlink_to(elsewhere)
        os.replace(tmp_path / "link", path)
        with pytest.raises(AuditError, match="was replaced before appending"):
            log.write(_event("redirected"))
    assert not elsewhere.exists()


def test_a_new_log_never_opens_through_a_symlink(tmp_path: Path) -> None:
    # Issue 10 item 2: a link left in the log's place made the next session create its target.
    target = tmp_path / "target.jsonl"
    (tmp_path / "audit.jsonl").symlink_to(target)
    with pytest.raises(ConfigurationError, match="it is a symbolic link"):
        AuditLog(tmp_path / "audit.jsonl")
    assert not target.exists()


def test_an_append_after_the_log_was_replaced_by_another_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event("first"))
        (tmp_path / "fresh").write_bytes(path.read_bytes())
        os.replace(tmp_path / "fresh", path)
        with pytest.raises(AuditError, match="was replaced before appending"):
            log.write(_event("second"))


def test_an_unlink_between_the_checks_and_the_write_is_caught_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    real_write = os.write

    def unlink_then_write(fd: int, data: bytes) -> int:
        path.unlink()  # the race: after the before-check, before the bytes land
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", unlink_then_write)
    with pytest.raises(AuditError, match="was unlinked after appending"):
        log.write(_event("raced"))
    monkeypatch.undo()
    log.close()


def test_a_log_truncated_under_an_open_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event("first"))
        log.write(_event("second"))
        os.truncate(path, 0)
        with pytest.raises(AuditError, match="truncated, rewritten or appended to"):
            log.write(_event("third"))


def test_without_the_writer_guard_an_unlinked_append_is_silently_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mechanism can fail: with the same-file check switched off (main's behaviour), the
    # event goes to the unlinked inode and no log holds it.
    monkeypatch.setattr(AuditLog, "_check_same_file", lambda self, when: None)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as log:
        log.write(_event("first"))
        path.unlink()
        written = log.write(_event("lost"))
    assert written.action_id == "lost"
    assert not path.exists()


def test_the_chain_is_kept_across_writers_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    first, second = AuditLog(path), AuditLog(path)
    first.write(_event("a"))
    second.write(_event("b"))
    first.write(_event("c"))
    first.close()
    second.close()
    with AuditLog(path) as log:
        log.write(_event("d"))
    events = AuditLog(path).read()
    assert [(e.action_id, e.sequence) for e in events] == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
    assert verify_log(tmp_path).ok


def test_written_events_carry_their_chain_fields(tmp_path: Path) -> None:
    path = _log(tmp_path, count=2)
    first, second = _lines(path)
    head = json.loads((tmp_path / ("audit.jsonl" + HEAD_SUFFIX)).read_bytes())
    assert json.loads(first)["prev_sha256"] == head["genesis"]
    assert json.loads(second)["prev_sha256"] == hashlib.sha256(first[:-1]).hexdigest()
    assert head["last_sha256"] == hashlib.sha256(second[:-1]).hexdigest()
    assert head["count"] == 2 and head["size_bytes"] == len(first) + len(second)
    event = AuditLog(path).read()[1]
    assert dataclasses.replace(event, sequence=None, prev_sha256=None) == _event(
        "a-1", Verdict.DENY
    )


def test_a_chmod_of_the_log_or_its_directory_is_caught_at_the_next_append(tmp_path: Path) -> None:
    # Landlock does not mediate chmod: an unprivileged host's session (same uid) can do this.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    for victim, mode in [(state, 0o755), (state / "audit.jsonl", 0o644), (state, 0o500)]:
        path = state / "audit.jsonl"
        with AuditLog(path) as log:
            log.write(_event("before"))
            victim.chmod(mode)
            with pytest.raises(AuditError, match=r"owner or mode .* changed before appending"):
                log.write(_event("after"))
        victim.chmod(0o700 if victim.is_dir() else 0o600)
    assert [e.action_id for e in AuditLog(state / "audit.jsonl").read()] == ["before"] * 3


def test_a_head_swapped_for_a_symlink_is_neither_read_nor_written_through(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    head = tmp_path / ("audit.jsonl" + HEAD_SUFFIX)
    with AuditLog(path) as log:
        log.write(_event("first"))
        victim = tmp_path / "victim"
        victim.write_bytes(head.read_bytes())
        head.unlink()
        head.symlink_to(victim)
        with pytest.raises(AuditError, match="cannot read the chain head"):
            log.write(_event("second"))
    assert json.loads(victim.read_bytes())["count"] == 1
    _assert_detected(tmp_path, "cannot read the chain head")
