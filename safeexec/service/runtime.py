"""What one server process holds and does: its sessions, quotas, backends, and the operations.

Every operation is async and thin: it checks ownership (``SessionNotFound``) and quotas
(``QuotaExceeded``), then makes one ``Session`` call in a worker thread. Nothing here decides
what may run; the session's policy does. The backends are made once per process and shared by
every session (one native template forks them all); sessions are closed off the loop, by
``DELETE``, by the idle sweep, or all at once on shutdown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from starlette.types import Receive

from safeexec.backends.base import Backend
from safeexec.backends.registry import default_backend
from safeexec.backends.workdir import DirEntry
from safeexec.errors import BackendUnavailable
from safeexec.gate import GateResult, check_action
from safeexec.model.values import Action, ExecStatus, Outcome, SyscallKilled
from safeexec.policy.loader import load_policy
from safeexec.policy.narrow import narrow_limits
from safeexec.policy.schema import Policy
from safeexec.service.auth import TokenEntry, TokenStore
from safeexec.service.config import ServiceConfig
from safeexec.service.events import ServerEvent
from safeexec.service.metrics import ServiceMetrics
from safeexec.service.quotas import QuotaLedger
from safeexec.service.runs import ClientLeft, in_thread, run_watching_client
from safeexec.service.schemas import CreateSessionIn, RunIn
from safeexec.service.sessions import SessionRecord, SessionRegistry
from safeexec.session.session import Session

__all__ = ["BadRequest", "Runtime", "WorkerCrashed", "crashed"]


class BadRequest(Exception):
    """The request names something the server does not offer (a 400, with how to fix it)."""


class WorkerCrashed(Exception):
    """The session's worker died during the run and nobody here killed it (a 502).

    Not a limit (those are ``timeout`` / ``limit_exceeded``), not a host interrupt, not a
    syscall the sandbox refused: the process was killed from outside or crashed. The step is
    recorded as usual and the session stays open; its next run starts a fresh interpreter.
    """

    def __init__(self, session_id: str, outcome: Outcome) -> None:
        result = outcome.result
        detail = "" if result is None else f" ({outcome.observation.text.splitlines()[0]})"
        super().__init__(
            f"the worker of session {session_id} died during the run{detail}; the session is "
            "still open and its next run starts a fresh interpreter (its state is lost)"
        )
        self.session_id = session_id
        self.outcome = outcome


def crashed(outcome: Outcome) -> bool:
    """Whether ``outcome``'s worker was killed by something other than a limit or the sandbox."""
    result = outcome.result
    return (
        result is not None
        and result.status is ExecStatus.KILLED
        and not any(isinstance(e, SyscallKilled) for e in result.events)
    )


class Runtime:
    """The live state of one server process; touch it only from the event loop."""

    def __init__(
        self,
        config: ServiceConfig,
        tokens: TokenStore,
        *,
        backends: Mapping[str, Backend] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.tokens = tokens
        self.ledger = QuotaLedger()
        self.registry = SessionRegistry(clock=monotonic)
        self.limiter = anyio.CapacityLimiter(config.max_worker_threads)
        self.metrics = ServiceMetrics(open_sessions=lambda: len(self.registry.all()))
        self._monotonic = monotonic
        self._policies: dict[str, Policy] = {name: load_policy(name) for name in config.policies}
        self._backends: dict[str, Backend] = dict(backends or {})
        for mode in self._backends:
            config.refuse_in_process(mode)
        self._owned_backends: list[str] = []
        self._unavailable: dict[str, str] = {}
        for mode in config.modes:
            if mode not in self._backends:
                try:
                    self._backends[mode] = default_backend(mode)
                    self._owned_backends.append(mode)
                except BackendUnavailable as exc:
                    self._unavailable[mode] = str(exc)

    # -- sessions ------------------------------------------------------------------------------

    async def create(self, token: TokenEntry, body: CreateSessionIn) -> SessionRecord:
        policy = self._policy(body.policy)
        mode = body.mode or policy.backends.default
        self._check_mode(mode)
        if body.limits is not None:
            policy = narrow_limits(
                policy,
                wall_seconds=body.limits.wall_seconds,
                cpu_seconds=body.limits.cpu_seconds,
                memory_bytes=body.limits.memory_bytes,
            )
        self.ledger.admit_session(token.token_id, token.quota)
        session_id = f"{self.config.replica_id}-{uuid.uuid4().hex[:16]}"
        # Shielded: a session opened but never registered would be a leak nobody can close.
        with anyio.CancelScope(shield=True):
            try:
                session = await in_thread(
                    lambda: Session(
                        policy=policy,
                        mode=mode,
                        state_dir=self.config.state_dir,
                        backends=self._backends,
                        session_id=session_id,
                        audit_fsync=self.config.audit_fsync,
                    ),
                    limiter=self.limiter,
                )
            except BaseException:
                self.ledger.release_session(token.token_id)
                raise
            record = SessionRecord(
                session_id=session_id,
                owner=token.token_id,
                session=session,
                mode=mode,
                last_used=self._monotonic(),
            )
            self.registry.add(record)
        self.metrics.session_opened()
        return record

    def get(self, token: TokenEntry, session_id: str) -> SessionRecord:
        return self.registry.get(token.token_id, session_id)

    async def run(
        self, token: TokenEntry, session_id: str, body: RunIn, *, receive: Receive, run_id: str
    ) -> Outcome:
        """One step in the owner's session; ``ClientLeft`` if the client went away meanwhile.

        The cell's output goes to the session's event subscribers while it runs (tagged
        ``run_id``), then a ``step`` event says how it ended."""
        if (body.code is None) == (body.reply is None):
            raise BadRequest("give exactly one of 'code' (run as it is) or 'reply' (extracted)")
        # First: a token out of CPU has had its sessions stopped; it hears why, not a 404.
        self.ledger.refuse_if_spent(token.token_id, token.quota)
        record = self.registry.get(token.token_id, session_id)
        session = record.session
        code, reply, timeout = body.code, body.reply, body.timeout
        relay = record.events.publisher(run_id)

        def step(cpu: float) -> Outcome:
            if code is not None:
                return session.run_action(
                    Action.create(code), timeout=timeout, on_output=relay, cpu_seconds=cpu
                )
            assert reply is not None
            return session.run(reply, timeout=timeout, on_output=relay, cpu_seconds=cpu)

        slot = self.ledger.run_slot(
            token.token_id, token.quota, cpu_seconds=session.policy.limits.cpu_seconds
        )
        admitted = self._monotonic()
        with self.registry.in_use(record), slot as cpu_seconds:
            async with record.run_lock:
                self.registry.get(token.token_id, session_id)  # deleted while it waited?
                record.running = True
                record.stopped = False
                try:
                    outcome = await run_watching_client(
                        lambda: step(cpu_seconds),
                        receive=receive,
                        interrupt=session.interrupt,
                        limiter=self.limiter,
                    )
                except ClientLeft as left:
                    if isinstance(left.value, Outcome):
                        self._account(record, left.value, run_id)
                        self.metrics.run_ended(left.value, self._monotonic() - admitted)
                    raise
                finally:
                    record.running = False
        self._account(record, outcome, run_id)
        self.metrics.run_ended(outcome, self._monotonic() - admitted)
        if not record.stopped and crashed(outcome):
            raise WorkerCrashed(session_id, outcome)
        return outcome

    def interrupt(self, token: TokenEntry, session_id: str) -> bool:
        """Interrupt the owner's running cell; ``False`` when none was running."""
        record = self.registry.get(token.token_id, session_id)
        record.stopped = record.running
        record.session.interrupt()  # sets a flag the backend polls: it does not block
        return record.running

    async def delete(self, token: TokenEntry, session_id: str) -> None:
        await self._close(self.registry.get(token.token_id, session_id))

    async def sweep_idle(self) -> int:
        """Close every session idle for ``config.idle_seconds``; how many were closed."""
        idle = self.registry.idle(self.config.idle_seconds)
        for record in idle:
            await self._close(record, reason="the session was idle too long")
        return len(idle)

    async def meter_cpu(self) -> int:
        """Charge each session's CPU burnt between runs (threads or processes a cell left
        running) to its token, then close every session of a token whose CPU quota is spent;
        how many were closed. Runs every ``config.cpu_meter_seconds``."""
        records = [r for r in self.registry.all() if not r.running]
        if records:
            used = await in_thread(
                lambda: [r.session.unbilled_cpu_seconds() for r in records],
                limiter=self.limiter,
            )
            for record, seconds in zip(records, used, strict=True):
                self._charge(record.owner, seconds, "idle")
        stopped = 0
        for token_id in self.ledger.out_of_cpu():
            for record in self.registry.owned_by(token_id):
                await self._close(
                    record, reason="its token's CPU quota (cpu_seconds) is spent: stopped"
                )
                stopped += 1
        return stopped

    def end_event_streams(self) -> None:
        """End every session's event streams (a ``closed`` event); the server is stopping."""
        for record in self.registry.all():
            record.events.close("the server is shutting down")

    async def close_all(self) -> None:
        """Close every session (interrupting cells still running), then the backends made here."""
        for record in self.registry.all():
            record.stopped = True
            record.session.interrupt()
        for record in self.registry.all():
            with contextlib.suppress(Exception):
                await self._close(record)
        for mode in self._owned_backends:
            backend = self._backends[mode]
            with contextlib.suppress(Exception):
                await in_thread(backend.close, limiter=self.limiter)

    async def _close(
        self, record: SessionRecord, *, reason: str = "the session was closed"
    ) -> None:
        """Close ``record``'s session (its processes killed), charge its token the CPU it used
        since it was last charged, and only then forget its id. Shielded: a close begun ends."""
        if record.closing:
            return
        record.closing = True  # a 404 from now on
        record.events.close(reason)
        record.stopped = True
        record.session.interrupt()
        session = record.session
        with anyio.CancelScope(shield=True):
            try:
                await in_thread(session.close, limiter=self.limiter)
            finally:
                seconds = await in_thread(session.unbilled_cpu_seconds, limiter=self.limiter)
                self._charge(record.owner, seconds, "close")
                self.registry.forget(record)
                self.ledger.release_session(record.owner)

    def _charge(self, token_id: str, seconds: float, when: str) -> None:
        self.ledger.charge_cpu(token_id, seconds)
        self.metrics.charged(when, seconds)

    def _account(self, record: SessionRecord, outcome: Outcome, run_id: str) -> None:
        record.steps += 1
        record.remember(outcome)
        result = outcome.result
        if result is not None:
            self._charge(record.owner, result.usage.cpu_seconds, "run")
        record.events.publish(
            ServerEvent(
                name="step",
                data={
                    "run_id": run_id,
                    "action_id": outcome.action.action_id,
                    "verdict": outcome.decision.verdict.value,
                    "status": None if result is None else result.status.value,
                },
            )
        )

    # -- files and blobs -------------------------------------------------------------------------

    async def write_file(self, token: TokenEntry, session_id: str, path: str, data: bytes) -> None:
        record = self.registry.get(token.token_id, session_id)
        with self.registry.in_use(record):
            await in_thread(lambda: record.session.files.write(path, data), limiter=self.limiter)

    async def read_file(self, token: TokenEntry, session_id: str, path: str) -> bytes:
        record = self.registry.get(token.token_id, session_id)
        with self.registry.in_use(record):
            return await in_thread(lambda: record.session.files.read(path), limiter=self.limiter)

    async def list_files(
        self, token: TokenEntry, session_id: str, path: str
    ) -> tuple[DirEntry, ...]:
        record = self.registry.get(token.token_id, session_id)
        with self.registry.in_use(record):
            return await in_thread(lambda: record.session.files.list(path), limiter=self.limiter)

    async def remove_file(self, token: TokenEntry, session_id: str, path: str) -> None:
        record = self.registry.get(token.token_id, session_id)
        with self.registry.in_use(record):
            await in_thread(lambda: record.session.files.remove(path), limiter=self.limiter)

    async def read_blob(self, token: TokenEntry, session_id: str, sha256: str) -> tuple[bytes, str]:
        """A blob one of this session's outcomes referred to (any other is a 404), and the
        media type the outcome recorded for it."""
        record = self.registry.get(token.token_id, session_id)
        known = record.blobs.get(sha256)
        if known is None:
            raise FileNotFoundError(sha256)
        ref, media_type = known
        data = await in_thread(lambda: record.session.blobs.get(ref), limiter=self.limiter)
        return data, media_type

    # -- the static gate ---------------------------------------------------------------------------

    async def check(
        self, token: TokenEntry, code: str, *, policy: str | None, mode: str | None
    ) -> GateResult:
        """The static gate alone. It runs in the server process, so it holds one of the token's
        concurrent runs and its CPU time is charged to the token's quota, like a run's."""
        chosen = self._policy(policy)
        if mode is not None:
            self._check_mode(mode)
        else:  # the policy's default, refused as a session of it would be
            self.config.refuse_in_process(chosen.backends.default)
        action = Action.create(code)

        def timed_check() -> tuple[GateResult, float]:
            start = time.thread_time()
            return check_action(action, chosen, backend=mode), time.thread_time() - start

        with self.ledger.run_slot(token.token_id, token.quota):
            gate, cpu_seconds = await in_thread(timed_check, limiter=self.limiter)
        self._charge(token.token_id, cpu_seconds, "check")
        return gate

    # -- describing --------------------------------------------------------------------------------

    def describe(self, record: SessionRecord) -> dict[str, Any]:
        session = record.session
        return {
            "session_id": record.session_id,
            "replica_id": self.config.replica_id,
            "policy_id": session.policy.info.id,
            "policy_digest": session.policy.digest,
            "mode": record.mode,
            "limits": session.policy.limits.to_json(),
            "budget": dataclasses.asdict(session.budget),
            "steps": record.steps,
        }

    def _policy(self, name: str | None) -> Policy:
        chosen = self.config.policies[0] if name is None else name
        if chosen not in self._policies:
            raise BadRequest(
                f"policy={chosen} is not offered here; choose one of: {', '.join(self._policies)}"
            )
        return self._policies[chosen]

    def _check_mode(self, mode: str) -> None:
        self.config.refuse_in_process(mode)
        if mode in self._unavailable:
            raise BackendUnavailable(self._unavailable[mode])
        if mode not in self._backends:
            offered = ", ".join(sorted(self._backends))
            raise BadRequest(f"mode={mode} is not offered here; choose one of: {offered}")
