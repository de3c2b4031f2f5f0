"""The composition root: ``Session.run(text) -> Outcome`` wires the pure steps to backends, a log.

One call is one agent step: extract → combine → parse → scan + estimate → decide → (approve) →
backend run → observe → charge the budget → audit. A session owns its double budget, its audit log
and blob store (under ``state_dir``, default :func:`~safeexec.audit.statedir.default_state_dir`) and
one backend session per mode, opened lazily and kept, so state carries over between steps like a
notebook kernel. The state dir is the host's alone: 0700, and never inside, equal to or above the
workdir (``ConfigurationError``), so no session can reach the log or the blobs.

The backend sessions live in :class:`~safeexec.session.pool.BackendPool`, the counters behind
:meth:`Session.statistics` in :mod:`safeexec.session.statistics`.

Every outcome, denials included, is audited before ``run`` returns or raises. "Policy said no" is
an :class:`~safeexec.model.values.Outcome` with a deny decision; an exhausted budget is a deny
finding (``SX510``), never an exception. A backend that cannot be had raises ``BackendUnavailable``;
anything else a backend raises is a bug and surfaces as ``InternalError`` (the session survives).
"""

from __future__ import annotations

import os
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from safeexec._support.environment import fingerprint, session_distributions, with_session
from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import AuditLog, build_event
from safeexec.audit.statedir import default_state_dir, ensure_apart, open_private_dir
from safeexec.backends.base import (
    Backend,
    BackendSession,
    CallInterrupted,
    SessionSpec,
    ToolGateway,
)
from safeexec.backends.registry import shared_backends
from safeexec.backends.workdir import remove_tree
from safeexec.capabilities.gateway import (
    ApprovalRequest,
    Capability,
    CapabilitySet,
    ToolSpec,
    canonical_json,
    to_plain,
)
from safeexec.capabilities.specs import is_answer_sink
from safeexec.decide import (
    TOOL_BACKEND,
    approved_calls,
    decide,
    decide_tool_call,
    fail_closed,
    settle,
)
from safeexec.errors import (
    BackendUnavailable,
    ConfigurationError,
    InternalError,
    SafeExecError,
)
from safeexec.extract import combine, extract
from safeexec.gate import check_action
from safeexec.model.codec import JSONValue
from safeexec.model.values import (
    Action,
    ActionSource,
    Budget,
    Decision,
    ExecRequest,
    ExecResult,
    Finding,
    Observation,
    Outcome,
    OutputChunk,
    Verdict,
)
from safeexec.observe import OutputRelay, observe
from safeexec.policy.engine_rules import (
    BACKEND_CRASHED,
    BACKEND_UNAVAILABLE,
    CHECK_CRASHED,
)
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy
from safeexec.sandbox.egress_client import SESSION_SITE
from safeexec.sandbox.session_env import TMP_DIR
from safeexec.session.files import WorkdirFiles
from safeexec.session.pool import BackendPool
from safeexec.session.preload import data_preload
from safeexec.session.statistics import SessionStatistics, StepCounters
from safeexec.session.steps import (
    NO_CODE_FINDING,
    check_crashed,
    checked_timeout,
    no_code_action,
    settle_abandoned,
    tool_result,
)

__all__ = ["TOOL_BACKEND", "Approver", "Session", "SessionStatistics", "shared_backends"]

Approver = Callable[[Decision, Action], bool]
"""Asked about every ``needs_approval`` decision; ``True`` lets the action run."""


class Session:
    """One agent's run of steps under one policy, budget, audit log and set of backend sessions.

    ``policy`` is a :class:`Policy` or a pack name/path for :func:`load_policy`. ``mode`` is the
    backend to ask for (``None``: the policy's default). ``backends`` maps mode names to backends
    (``None``: the built-in ones, made on first use). ``approver`` answers ``needs_approval``
    decisions (without one they are denied); ``tool_approver`` answers tool calls whose grant
    requires approval (without one they are refused). ``clock`` must return aware datetimes.
    ``state_dir`` (default ``$XDG_STATE_HOME/safeexec``, else ``~/.local/state/safeexec``) holds
    ``audit.jsonl``, its chain head and ``blobs/``; it must lie apart from ``workdir``. Without
    ``workdir`` a fresh private temporary directory is made and removed on :meth:`close`.
    ``audit_fsync`` makes every audit line and blob durable before the step returns. ``seed``
    makes ``random`` and ``numpy.random`` start the same in every run of the session (in
    restricted modes, in the worker or in-process, the code's own ``random`` generator, seeded
    the same way: :mod:`safeexec._support.seeding`), for ``safeexec log replay``; every audit
    event records it, with the environment fingerprint (:mod:`safeexec._support.environment`). Use
    as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        *,
        policy: Policy | str | Path = "default",
        mode: str | None = None,
        workdir: Path | None = None,
        state_dir: Path | None = None,
        backends: Mapping[str, Backend] | None = None,
        approver: Approver | None = None,
        tool_approver: Callable[[ApprovalRequest], bool] | None = None,
        clock: Callable[[], datetime] | None = None,
        session_id: str | None = None,
        audit_fsync: bool = False,
        seed: int | None = None,
    ) -> None:
        self.policy = policy if isinstance(policy, Policy) else load_policy(policy)
        self.mode = mode
        self.session_id = session_id or f"s-{uuid.uuid4().hex[:12]}"
        # Absolute: the sandboxed worker runs in its own directory, where "./x" means nothing.
        self.state_dir = Path(default_state_dir() if state_dir is None else state_dir).absolute()
        if workdir is not None:
            if Path(workdir).exists() and not Path(workdir).is_dir():
                raise ConfigurationError(
                    f"workdir={str(workdir)!r} is not a directory; name a directory (it is "
                    "made if missing) or leave workdir unset for a fresh one"
                )
            ensure_apart(self.state_dir, Path(workdir).absolute())
        os.close(open_private_dir(self.state_dir))
        # Without backends=, sessions share the process's warm backends, whose templates preload
        # the data stack the policy allows. Looked up at call time:
        # safeexec.session.session.shared_backends is the seam tests replace.
        self._pool = BackendPool(
            backends,
            make=lambda mode: shared_backends.get(mode, preload=data_preload(self.policy, mode)),
        )
        self._approver = approver
        self._capabilities = CapabilitySet(approve=tool_approver)
        self._clock = clock or _utc_now
        self.blobs = BlobStore(self.state_dir / "blobs", fsync=audit_fsync)
        self.audit = AuditLog(self.state_dir / "audit.jsonl", fsync=audit_fsync)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigurationError(f"seed={seed!r} must be an int; pass e.g. seed=0")
        self.seed = seed
        self._environment_ref = self.blobs.put(fingerprint()).uri
        self._session_packages: dict[str, str] = {}
        self._owns_workdir = workdir is None
        self.workdir = (
            Path(tempfile.mkdtemp(prefix=f"safeexec-{self.session_id}-"))
            if workdir is None
            else Path(workdir).absolute()
        )
        budget = self.policy.budget
        self._budget = Budget(
            steps_left=budget.steps,
            cpu_seconds_left=budget.cpu_seconds,
            tool_calls_left=budget.tool_calls,
        )
        self._running: BackendSession | None = None  # the backend session of the call in flight
        self.files = WorkdirFiles(
            self.workdir,
            max_read_bytes=self.policy.limits.file_size_bytes,
            running=lambda: self._pool.for_files(self.mode),
        )
        """Write, read, list and remove files beneath the workdir (see :class:`WorkdirFiles`)."""
        self._lock = threading.RLock()
        self._closed = False
        self._counters = StepCounters()

    # ---------------------------------------------------------------------------------------
    # Public face

    @property
    def budget(self) -> Budget:
        """What is left of the session's steps, CPU seconds and tool calls."""
        return self._budget

    def run(
        self,
        text: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
        cpu_seconds: float | None = None,
    ) -> Outcome:
        """Run the code in one model reply (one reply = one action = one step).

        ``on_output`` receives the cell's stdout and stderr while it runs, as
        :class:`~safeexec.model.values.OutputChunk` values cleaned like the observation's text and
        bounded by the step's ``output_bytes`` per stream (modes that cannot stream deliver
        the output once the cell ends). It is called on the thread running the step; if it
        raises, delivery stops, the step finishes and is recorded, then the exception is raised.

        ``timeout`` (seconds) narrows this step's wall-clock limit, ``cpu_seconds`` its CPU-time
        limit; neither ever widens the policy's.
        At a time limit the cell is interrupted (``KeyboardInterrupt`` in the code) and the step
        ends ``interrupted`` with the session's state kept, unless the code does not stop within
        a grace period (then it is killed and the state is lost). A ``KeyboardInterrupt`` in the
        host during the step interrupts the cell the same way, records the step, and is raised
        again; the session stays in step for the next run.
        """
        if not isinstance(text, str):
            raise ConfigurationError(
                f"text must be the model's reply as str, got {type(text).__name__}; "
                "decode bytes first"
            )
        wall = checked_timeout(timeout)
        cpu = checked_timeout(cpu_seconds)
        with self._lock:
            started = self._now()
            try:
                action = combine(extract(text))
            except Exception as exc:  # a crashed extractor must not let anything run
                return self._step(
                    no_code_action(),
                    started,
                    crashed=check_crashed("extract", exc),
                )
            if action is None:
                return self._step(no_code_action(), started, crashed=NO_CODE_FINDING)
            return self._step(action, started, timeout=wall, cpu=cpu, on_output=on_output)

    def run_action(
        self,
        action: Action,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
        cpu_seconds: float | None = None,
    ) -> Outcome:
        """Run one already-extracted action (one step); options as for :meth:`run`."""
        wall = checked_timeout(timeout)
        cpu = checked_timeout(cpu_seconds)
        with self._lock:
            return self._step(action, self._now(), timeout=wall, cpu=cpu, on_output=on_output)

    async def arun(
        self,
        text: str,
        *,
        timeout: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
    ) -> Outcome:
        """:meth:`run` in a worker thread, for asyncio harnesses (``on_output`` is called on it).

        Cancelling the task (``asyncio.wait_for``, ``task.cancel()``) interrupts the running cell,
        waits until the step is recorded and the session is back in step, then lets the
        ``CancelledError`` go on.
        """
        import asyncio  # only for async harnesses: a one-shot run has no use for it

        step = asyncio.ensure_future(
            asyncio.to_thread(self.run, text, timeout=timeout, on_output=on_output)
        )
        try:
            return await asyncio.shield(step)
        except asyncio.CancelledError:
            await settle_abandoned(step, self.interrupt)
            raise

    async def stream(
        self, text: str, *, timeout: float | None = None
    ) -> AsyncIterator[OutputChunk | Outcome]:
        """:meth:`run` as an async iterator: the output chunks while the cell runs, then its
        :class:`~safeexec.model.values.Outcome` (always the last item).

        Leaving the loop early (``break``, cancellation) interrupts the cell and waits until the
        step is recorded, as cancelling :meth:`arun` does. An exception of the step is raised
        by the iterator after the chunks that came before it.
        """
        import asyncio

        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[OutputChunk | None] = asyncio.Queue()

        def deliver(chunk: OutputChunk) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, chunk)

        step = asyncio.ensure_future(
            asyncio.to_thread(self.run, text, timeout=timeout, on_output=deliver)
        )
        # Scheduled after every chunk the step delivered (one thread, first in first out).
        step.add_done_callback(lambda _done: chunks.put_nowait(None))
        try:
            while (chunk := await chunks.get()) is not None:
                yield chunk
            yield step.result()
        finally:
            if not step.done():
                await settle_abandoned(step, self.interrupt)

    def interrupt(self) -> None:
        """Interrupt the cell running in this session, from any thread; no-op when none runs.

        The step still ends normally: status ``interrupted`` (state kept) or, if the code does
        not stop within the backend's grace period, killed."""
        running = self._running
        if running is not None:
            running.interrupt()

    def call_tool(self, name: str, arguments: Mapping[str, JSONValue]) -> Outcome:
        """Run one tool call as one step (an agent's JSON or text action), without a sandbox.

        The call goes through the same capability gateway as calls from code (grant, schema,
        scope, call limits, approval, the tool budget) and is charged and audited like a code
        step, with ``backend="tool"``; a refusal is an ``ERROR`` result carrying the
        ``ToolRefused`` event, never an exception.
        """
        with self._lock:
            started = self._now()
            if self._closed:
                raise ConfigurationError(
                    f"session session_id={self.session_id!r} is closed; open a new Session"
                )
            plain = to_plain(dict(arguments), where="call_tool arguments")
            action = Action.create(
                canonical_json({"arguments": plain, "tool": name}),
                source=ActionSource.TOOL_CALL,
                language="tool_call",
            )
            decision = decide_tool_call(policy=self.policy, budget=self._budget, backend=self.mode)
            result = None
            if decision.verdict is not Verdict.DENY:
                self._capabilities.begin_step(tool_calls_left=self._budget.tool_calls_left)
                reply = self._capabilities.invoke(name, {"args": [], "kwargs": plain})
                result = tool_result(reply, (self._now() - started).total_seconds(), self.blobs)
            observation = observe(
                decision=decision, result=result, blobs=self.blobs, config=self.policy.observe
            )
            return self._record(action, decision, result, observation, started)

    def statistics(self) -> SessionStatistics:
        with self._lock:
            return self._counters.snapshot(
                session_id=self.session_id,
                budget=self._budget,
                open_backends=self._pool.open_modes,
                audit_path=self.audit.path,
                audit_events=self.audit.statistics().events_written,
            )

    def unbilled_cpu_seconds(self) -> float:
        """CPU the session's sandboxes used outside its steps (threads or processes a cell left
        running) since this was last asked, now counted as charged; the next step's result is
        charged only what comes after. 0 while a step runs (the step is charged it); after
        :meth:`close`, what ran until the kill. For a host that bills someone (the service)."""
        if not self._lock.acquire(blocking=False):
            return 0.0
        try:
            return self._pool.unbilled_cpu_seconds()
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close every backend session (killing their process trees) and the audit log."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            failures = self._pool.close()
            self.audit.close()
            if self._owns_workdir:
                remove_tree(str(self.workdir))
            if failures:
                raise InternalError(
                    f"closing {len(failures)} backend(s) or session(s) failed: {failures[0]!r}"
                ) from failures[0]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------
    # Capabilities (tools). ``Session.grant(...)`` and the ToolGateway wiring belong here: every
    # backend session receives its gateway from ``_tool_gateway`` and the estimator learns the
    # granted tool names from it, so granting tools means changing only this section.

    def grant(
        self,
        tool: ToolSpec | Capability,
        *,
        max_calls: int | None = None,
        scope: Iterable[str] | None = None,
        requires_approval: bool | None = None,
    ) -> Capability:
        """Grant a tool (a ``@tool`` spec, or a token to narrow) to this session's code.

        The policy's ``[capabilities.<tool>]`` decides (see
        :func:`safeexec.policy.grants.reconcile_grant`); a tool it does not let be granted raises
        ``CapabilityError``. Grant tools before the first ``run`` of a mode (its sandbox learns
        the tool names when it starts).
        """
        from safeexec.policy.grants import reconcile_grant  # a one-shot run grants no tools

        name = tool.tool if isinstance(tool, Capability) else getattr(tool, "name", None)
        held = tool if isinstance(tool, Capability) else None
        terms = reconcile_grant(
            self.policy,
            name,
            max_calls=max_calls,
            scope=scope,
            requires_approval=requires_approval,
            held_calls=None if held is None else held.remaining_calls,
            held_scope=None if held is None else held.scope,
            effects=[str(e) for e in getattr(held.spec if held else tool, "effects", ())],
            answer_sink=isinstance(tool, ToolSpec) and is_answer_sink(tool),
        )
        if self._pool.open_modes:
            raise ConfigurationError(
                f"cannot grant tool name={name!r} after the sandbox of mode(s) "
                f"{list(self._pool.open_modes)} started; grant tools before the first run"
            )
        with self._lock:
            return self._capabilities.grant(
                tool,
                max_calls=terms.max_calls,
                scope=terms.scope,
                requires_approval=terms.requires_approval,
            )

    def _tool_gateway(self) -> ToolGateway | None:
        """The gateway through which sandboxed code reaches host tools (``None``: none granted)."""
        return self._capabilities if self._capabilities.describe() else None

    def _tool_names(self) -> tuple[str, ...]:
        gateway = self._tool_gateway()
        return () if gateway is None else tuple(tool.name for tool in gateway.describe())

    # ---------------------------------------------------------------------------------------
    # One step

    def _step(
        self,
        action: Action,
        started: datetime,
        *,
        crashed: Finding | None = None,
        timeout: float | None = None,
        cpu: float | None = None,
        on_output: Callable[[OutputChunk], None] | None = None,
    ) -> Outcome:
        if self._closed:
            raise ConfigurationError(
                f"session session_id={self.session_id!r} is closed; open a new Session"
            )
        gated, checked = self._decide(action, crashed)
        decision = settle(
            gated,
            approved=self._ask_approver(gated, action),
            wall_seconds=timeout,
            cpu_seconds=cpu,
        )
        result: ExecResult | None = None
        failure: SafeExecError | None = None
        interrupted: CallInterrupted | None = None
        relay = None if on_output is None else OutputRelay(on_output)
        if decision.verdict is not Verdict.DENY and checked is None:
            # Allowed yet nothing parsed: never run unchecked text (fail closed).
            decision = fail_closed(decision, CHECK_CRASHED, InternalError("no checked code to run"))
        if decision.verdict is not Verdict.DENY and checked is not None:
            try:
                result = self._execute(decision, action, checked, relay)
            except CallInterrupted as exc:
                # The host's KeyboardInterrupt: the backend settled the call; record, then raise.
                result, interrupted = exc.result, exc
            except KeyboardInterrupt:
                # A backend that could not settle the call is out of step: start it afresh.
                self._pool.discard(decision.backend)
                raise
            except (BackendUnavailable, ConfigurationError) as exc:
                failure = exc
                decision = fail_closed(decision, BACKEND_UNAVAILABLE, exc)
            except Exception as exc:
                failure = InternalError(
                    f"backend={decision.backend!r} failed running action_id="
                    f"{action.action_id!r}: {exc!r}; the session was reset and the step denied"
                )
                failure.__cause__ = exc
                decision = fail_closed(decision, BACKEND_CRASHED, exc)
                self._pool.discard(decision.backend)
        try:
            observation = observe(
                decision=decision, result=result, blobs=self.blobs, config=self.policy.observe
            )
        except Exception as exc:
            observation = Observation(
                text="safeexec could not render this step's output (internal error)",
                truncated=False,
            )
            failure = failure or InternalError(f"observe failed: {exc!r}")
        outcome = self._record(action, decision, result, observation, started)
        if relay is not None:
            relay.finish(result, self.blobs)
        if failure is not None:
            if isinstance(failure, InternalError):
                self._counters.internal_error()
            raise failure
        if interrupted is not None:
            raise KeyboardInterrupt(f"interrupted during step action_id={action.action_id!r}")
        if relay is not None and relay.error is not None:
            raise relay.error
        return outcome

    def _decide(self, action: Action, crashed: Finding | None) -> tuple[Decision, str | None]:
        """The static gate (parse → estimate → scan → decide) under the budget left.

        Returns the decision and the exact text that was checked (``Parsed.code``, normalised by
        the parser): that text, never ``Action.code``, is what runs.
        """
        if crashed is None:
            try:
                gate = check_action(
                    action,
                    self.policy,
                    budget=self._budget,
                    backend=self.mode,
                    tool_names=self._tool_names(),
                    capabilities=self._capabilities,
                )
                return gate.decision, gate.checked_code
            except Exception as exc:  # the gate never raises; if it did, nothing runs
                crashed = check_crashed("gate", exc)
        decision = decide(
            findings=(crashed,),
            estimate=None,
            policy=self.policy,
            budget=self._budget,
            backend=self.mode,
        )
        return decision, None

    def _ask_approver(self, decision: Decision, action: Action) -> bool | None:
        """The approver's answer to a ``needs_approval`` decision (``None``: nothing to ask)."""
        if decision.verdict is not Verdict.NEEDS_APPROVAL:
            return None
        granted = False
        if self._approver is not None:
            try:
                granted = self._approver(decision, action) is True
            except Exception:  # a crashing approver approves nothing
                granted = False
        self._counters.approval(granted=granted)
        return granted

    def _execute(
        self, decision: Decision, action: Action, checked: str, relay: OutputRelay | None
    ) -> ExecResult:
        session = self._backend_session(decision)
        request = ExecRequest(action_id=action.action_id, code=checked, limits=decision.limits)
        # The gateway charges the session's tool budget per call, so one step cannot overspend it.
        self._capabilities.begin_step(
            tool_calls_left=self._budget.tool_calls_left,
            approved=approved_calls(decision, self._approver),  # an approved plan's calls
        )
        self._running = session
        try:
            # Without a callback the call is made as before: a mode need not know of streaming.
            if relay is None:
                result = session.run(request)
            else:
                result = session.run(request, on_output=relay)
        finally:
            self._running = None
        if not isinstance(result, ExecResult):
            raise TypeError(f"backend returned {type(result).__name__}, not ExecResult")
        return result

    def _backend_session(self, decision: Decision) -> BackendSession:
        return self._pool.session(decision.backend, self._spec(decision))

    def _spec(self, decision: Decision) -> Callable[[], SessionSpec]:
        """What a backend session of this step's mode is opened with, made only when needed."""

        def spec() -> SessionSpec:
            self.workdir.mkdir(parents=True, exist_ok=True)
            ensure_apart(self.state_dir, self.workdir)  # again, now that both exist: by inode too
            return SessionSpec(
                workdir=self.workdir,
                limits=decision.limits,
                blobs=self.blobs,
                tools=self._tool_gateway(),
                require=frozenset(self.policy.backends.require),
                rung=self.policy.backends.rung,
                imports=self.policy.imports.allow,
                env=self._sandbox_env(),
                workdir_symlinks=self.policy.sandbox.workdir_symlinks,
                seed=self.seed,
                dsl=self.policy.dsl,
                network=self.policy.network,
            )

        return spec

    def _note_session_packages(self) -> None:
        """With the network on, what the session installed (``pip install``) joins the
        environment fingerprint the next events reference."""
        if not self.policy.network.enabled:
            return
        installed = session_distributions(str(self.workdir), (TMP_DIR, SESSION_SITE))
        if installed != self._session_packages:
            self._session_packages = installed
            self._environment_ref = self.blobs.put(with_session(fingerprint(), installed)).uri

    def _sandbox_env(self) -> dict[str, str]:
        names = self.policy.sandbox.env_passthrough
        return {name: os.environ[name] for name in names if name in os.environ}

    def _record(
        self,
        action: Action,
        decision: Decision,
        result: ExecResult | None,
        observation: Observation,
        started: datetime,
    ) -> Outcome:
        # The model's code itself, stored under its code_sha256, so every event can be replayed.
        self.blobs.put(action.code.encode("utf-8", "surrogatepass"))
        usage = result.usage if result is not None else None
        cpu = usage.cpu_seconds if usage is not None else 0.0
        calls = usage.tool_calls if usage is not None else 0
        self._budget = self._budget.charge(steps=1, cpu_seconds=cpu, tool_calls=calls)
        self._counters.step(decision, result, cpu_seconds=cpu, tool_calls=calls)
        finished = self._now()
        self._note_session_packages()
        event = build_event(
            action=action,
            decision=decision,
            result=result,
            session_id=self.session_id,
            timestamp=started,
            duration_ms=(finished - started).total_seconds() * 1000.0,
            budget=self._budget,
            environment_ref=self._environment_ref,
            seed=self.seed,
        )
        written = self.audit.write(event)
        return Outcome(
            action=action,
            decision=decision,
            result=result,
            observation=observation,
            event=written,
        )

    def _now(self) -> datetime:
        moment = self._clock()
        if moment.tzinfo is None:
            raise ConfigurationError(
                f"clock returned a naive datetime {moment!r}; return datetime.now(UTC) or similar"
            )
        return moment


def _utc_now() -> datetime:
    return datetime.now(UTC)
