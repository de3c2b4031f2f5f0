"""Re-run a recorded session's code steps in a fresh session and say which outputs differ.

:func:`replay_log` reads the audit log strictly, takes one session's steps in order, and runs each
code step's recorded code (from its blob) in a new :class:`~safeexec.session.session.Session` with a
fresh workdir and its own state dir (the original log is never written). A step is the same
when its verdict, status and stdout match the record; stderr is compared too but reported
apart (tracebacks name paths that move). Tool-call steps are skipped (their tools are the
host's, not the log's), and files the original host uploaded are not in the log, so steps that
read them differ. The report says whether the policy's digest and the sandbox's version changed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from safeexec import __version__
from safeexec._support.environment import distribution_changes, fingerprint
from safeexec._support.escaping import escape_controls
from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import SANDBOX_IMAGE, read_log
from safeexec.backends.registry import refuse_in_process
from safeexec.backends.workdir import remove_tree
from safeexec.errors import AuditError, ConfigurationError
from safeexec.model.values import Action, AuditEvent
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.session.session import TOOL_BACKEND, Session

__all__ = ["ReplayReport", "StepReplay", "replay_log"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepReplay:
    """One recorded step and how its re-run compares (``differences`` empty: the same)."""

    sequence: int | None
    action_id: str
    skipped: str = ""  # why the step was not re-run
    differences: tuple[str, ...] = ()
    stderr_differs: bool = False

    @property
    def same(self) -> bool:
        return not self.skipped and not self.differences


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """What :func:`replay_log` found for one session."""

    session_id: str
    steps: tuple[StepReplay, ...]
    environment_changes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Did every re-run step give what was recorded?"""
        return all(step.same or step.skipped for step in self.steps)


def replay_log(
    state_dir: Path,
    *,
    session_id: str | None = None,
    policy: Policy | str | Path | None = None,
    allow_in_process: bool = False,
) -> ReplayReport:
    """Replay session ``session_id`` (default: the log's last) of ``state_dir``'s audit log.

    ``policy`` defaults to the recorded policy id as a pack name. ``ConfigurationError`` if the
    log holds no such session; ``AuditError`` if the log does not verify; ``InProcessRefused``,
    before anything runs, if a code step was recorded in a mode that runs in the host process
    (not a security boundary) and ``allow_in_process`` is not set.
    """
    state = Path(state_dir)
    events = read_log(state)
    if not events:
        raise ConfigurationError(f"the audit log in state_dir={str(state)!r} holds no steps")
    chosen_id = session_id or events[-1].session_id
    steps = [event for event in events if event.session_id == chosen_id]
    if not steps:
        raise ConfigurationError(
            f"no steps of session_id={chosen_id!r} in the log; `safeexec log show` lists them"
        )
    for event in steps:
        if event.backend != TOOL_BACKEND:
            refuse_in_process(
                event.backend,
                allowed=allow_in_process,
                face="replay",
                option="replay_log(..., allow_in_process=True)",
            )
    recorded = BlobStore(state / "blobs")
    loaded = policy if isinstance(policy, Policy) else load_policy(policy or steps[0].policy_id)
    changes = _environment_changes(steps[0], loaded, recorded)
    replay_state = Path(tempfile.mkdtemp(prefix="safeexec-replay-"))
    results: list[StepReplay] = []
    try:
        with Session(
            policy=loaded, state_dir=replay_state / "state", seed=steps[0].seed
        ) as session:
            for event in steps:
                results.append(_replay_step(session, event, recorded))
    finally:
        remove_tree(str(replay_state))
    return ReplayReport(
        session_id=chosen_id, steps=tuple(results), environment_changes=tuple(changes)
    )


def _environment_changes(first: AuditEvent, policy: Policy, recorded: BlobStore) -> list[str]:
    changes = []
    if policy.digest != first.policy_digest:
        changes.append(
            f"policy {first.policy_id}: digest {first.policy_digest[:12]} → {policy.digest[:12]}"
        )
    if first.environment_ref is None:
        # A log from before fingerprints: only what every event names.
        if first.sandbox_version != __version__:
            changes.append(f"safeexec {first.sandbox_version} → {__version__}")
        if first.sandbox_image != SANDBOX_IMAGE:
            changes.append(f"interpreter {first.sandbox_image} → {SANDBOX_IMAGE}")
        return changes
    try:
        before = recorded.get(first.environment_ref)
    except (KeyError, ValueError, AuditError):
        return [*changes, "the recorded environment fingerprint is missing"]
    return [*changes, *distribution_changes(before, fingerprint())]


def _replay_step(session: Session, event: AuditEvent, recorded: BlobStore) -> StepReplay:
    if event.backend == TOOL_BACKEND:
        return StepReplay(
            sequence=event.sequence, action_id=event.action_id, skipped="a tool call, not code"
        )
    try:
        code = recorded.get(f"blob://sha256:{event.code_sha256}").decode("utf-8", "surrogatepass")
    except (KeyError, ValueError, AuditError) as exc:
        return StepReplay(
            sequence=event.sequence,
            action_id=event.action_id,
            skipped=f"its code blob is missing or corrupt ({exc})",
        )
    session.mode = event.backend or None
    outcome = session.run_action(Action.create(code, language=event.language))
    found = []
    if outcome.decision.verdict is not event.verdict:
        found.append(f"verdict {event.verdict.value} → {outcome.decision.verdict.value}")
    result = outcome.result
    if (result.status if result is not None else None) != event.status:
        before = event.status.value if event.status is not None else "not run"
        after = result.status.value if result is not None else "not run"
        found.append(f"status {before} → {after}")
    stdout = result.stdout.uri if result is not None else None
    if stdout != event.stdout_ref:
        found.append("stdout differs" + _where(event.stdout_ref, stdout, recorded, session.blobs))
    stderr = result.stderr.uri if result is not None else None
    return StepReplay(
        sequence=event.sequence,
        action_id=event.action_id,
        differences=tuple(found),
        stderr_differs=stderr != event.stderr_ref,
    )


def _where(
    before_ref: str | None, after_ref: str | None, before: BlobStore, after: BlobStore
) -> str:
    """The first line where the new output leaves the recorded one."""
    try:
        old = before.get(before_ref).split(b"\n") if before_ref else []
        new = after.get(after_ref).split(b"\n") if after_ref else []
    except (KeyError, ValueError, AuditError):
        return " (a stdout blob is missing)"
    for number, (was, now) in enumerate(zip(old, new, strict=False), start=1):
        if was != now:
            return f" at line {number}: {_show(was)} → {_show(now)}"
    return f" in length: {len(old):,} → {len(new):,} lines"


def _show(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return repr(escape_controls(text if len(text) <= 60 else text[:57] + "..."))
