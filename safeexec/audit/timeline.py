"""A person's view of an audit log: every step in order, with its code, verdict and output.

:func:`show_log` reads a state dir strictly (the hash chain is checked first, nothing is created)
and renders each event: when and where it ran, the verdict and its findings, the code, stdout
and stderr (head and tail), the error the code raised, artifacts, tool calls and the budget
left. Everything shown from the log or its blobs is escaped like an observation; a blob that is
missing or corrupt is named, never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from safeexec._support.escaping import escape_controls
from safeexec._support.units import format_bytes, format_seconds
from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import read_log
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import AuditEvent, NetworkConnection, ToolCalled, ToolRefused

__all__ = ["show_log"]

_SHOWN_LINES = 12  # of each text: the first and last, half each


def show_log(state_dir: Path, *, session_id: str | None = None, lines: int = _SHOWN_LINES) -> str:
    """The events in ``state_dir``'s audit log as readable text (``session_id``: only that
    session's, and the last line says how many other sessions the log holds).

    A state dir is shared (the default one holds every session of the user), so a session shown
    alone is said to be one of several. Raises ``AuditError`` if the log does not verify
    (``safeexec log verify`` says why), ``ConfigurationError`` if it holds no ``session_id``.
    """
    state = Path(state_dir)
    events = read_log(state)
    blobs = BlobStore(state / "blobs")
    chosen = [e for e in events if session_id is None or e.session_id == session_id]
    if session_id is not None and not chosen:
        raise ConfigurationError(
            f"no session {session_id!r} in the audit log of {str(state)!r} "
            f"({_count(len({e.session_id for e in events}), 'session')}); "
            "`safeexec log show` without --session lists them"
        )
    out: list[str] = []
    for event in chosen:
        out.extend(_event_lines(event, blobs, lines=lines))
        out.append("")
    sessions = len({event.session_id for event in chosen})
    summary = f"{len(chosen)} steps in {sessions} sessions"
    if session_id is not None:
        others = {e.session_id for e in events} - {session_id}
        skipped = sum(1 for e in events if e.session_id != session_id)
        summary = (
            f"{_count(len(chosen), 'step')} of session {_e(session_id)}; skipped "
            f"{_count(len(others), 'other session')} ({_count(skipped, 'step')})"
        )
    out.append(f"{summary}; chain verified ({len(events)} events)")
    return "\n".join(out)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _event_lines(event: AuditEvent, blobs: BlobStore, *, lines: int) -> list[str]:
    ran = event.status is not None
    outcome = event.verdict.value
    if event.status is not None:
        outcome += f" → {event.status.value}"
    if event.exit_code is not None:
        outcome += f" (exit {event.exit_code})"
    out = [
        f"#{event.sequence} {event.timestamp} session {_e(event.session_id)} "
        f"step {_e(event.action_id)}: {outcome}, {event.duration_ms:,.0f} ms",
        f"  mode {_e(event.backend) or '-'} · policy {_e(event.policy_id)}"
        f"@{event.policy_digest[:12]} · {_e(event.sandbox_image)} safeexec "
        f"{_e(event.sandbox_version)}"
        + (f" · seed {event.seed}" if event.seed is not None else "")
        + (f" · environment {_e(event.environment_ref)}" if event.environment_ref else ""),
    ]
    if ran:
        limits = event.limits
        out.append(
            f"  limits {format_seconds(limits.cpu_seconds)} CPU, "
            f"{format_seconds(limits.wall_seconds)} wall, {format_bytes(limits.memory_bytes)} "
            f"memory, {format_bytes(limits.output_bytes)} output · used "
            f"{format_seconds(event.usage.cpu_seconds)} CPU, "
            f"{format_bytes(event.usage.max_rss_bytes)} peak memory"
        )
    out.append(f"  code ({event.language}):")
    out.extend(_blob_text(blobs, f"blob://sha256:{event.code_sha256}", lines=lines))
    for finding in event.findings:
        out.append(
            f"  {_e(finding.rule)} {_e(finding.name)} ({finding.enforcement.value}): "
            f"{_e(finding.message)}"
        )
    for label, ref in (("stdout", event.stdout_ref), ("stderr", event.stderr_ref)):
        if ref is None:
            continue
        body = _blob_text(blobs, ref, lines=lines)
        if body:
            out.append(f"  {label}:")
            out.extend(body)
    if event.error is not None:
        value = f": {_e(event.error.value)}" if event.error.value else ""
        out.append(f"  error {_e(event.error.name)}{value}")
    for artifact in event.artifacts:
        out.append(
            f"  artifact {_e(artifact.name)} ({artifact.blob.size:,} bytes, "
            f"{_e(artifact.media_type)})"
        )
    out.extend(_tool_lines(event))
    if event.budget is not None:
        budget = event.budget
        out.append(
            f"  budget left: {budget.steps_left} steps, "
            f"{format_seconds(budget.cpu_seconds_left)} CPU, {budget.tool_calls_left} tool calls"
        )
    if event.masked_fields:
        out.append(f"  masked: {', '.join(_e(name) for name in event.masked_fields)}")
    return out


def _tool_lines(event: AuditEvent) -> Iterable[str]:
    for effect in event.side_effects:
        if isinstance(effect, ToolCalled):
            effects = f" [{', '.join(_e(e) for e in effect.effects)}]" if effect.effects else ""
            state = "ok" if effect.ok else "failed"
            yield f"  tool {_e(effect.tool)} {state}{effects}"
        elif isinstance(effect, ToolRefused):
            yield f"  tool {_e(effect.tool)} refused: {_e(effect.reason)}"
        elif isinstance(effect, NetworkConnection):
            yield f"  {_network_line(effect)}"
        else:
            yield f"  event {effect.kind}: {_e(str(effect.to_json()))}"


def _network_line(effect: NetworkConnection) -> str:
    """``network api.example.org:443 CONNECT allowed via 93.184.216.34: 612 B up, 48 KiB down``."""
    where = f"{_e(effect.host)}:{effect.port}" if effect.host else "(no request)"
    line = f"network {where} {_e(effect.method)} {effect.verdict}"
    if effect.address:
        line += f" via {_e(effect.address)}"
    line += (
        f": {format_bytes(effect.bytes_sent)} up, {format_bytes(effect.bytes_received)} down, "
        f"{format_seconds(effect.duration_ms / 1000)}"
    )
    if effect.rule:
        line += f" ({_e(effect.rule)} {_e(effect.key)}: {_e(effect.reason)})"
    return line


def _blob_text(blobs: BlobStore, ref: str, *, lines: int) -> list[str]:
    try:
        data = blobs.get(ref)
    except KeyError:
        return [f"    [missing blob {ref}]"]
    except (AuditError, ValueError) as exc:
        return [f"    [unreadable blob {ref}: {_e(str(exc))}]"]
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    body = text.split("\n")
    if body and body[-1] == "":
        body.pop()
    if len(body) > lines:
        half = max(1, lines // 2)
        cut = len(body) - 2 * half
        body = [*body[:half], f"[... {cut:,} lines cut ...]", *body[-half:]]
    return [f"    | {_e(line)}" for line in body]


def _e(text: str) -> str:
    return escape_controls(text)
