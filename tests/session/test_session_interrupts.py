"""Session timeouts and interrupts: narrowed limits; Ctrl-C and cancellation keep it in step."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from safeexec.audit.log import AuditLog
from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo
from safeexec.session.session import Session

FAKE_POLICY = Policy(
    info=PolicyInfo(id="unit"),
    backends=BackendsConfig(allowed=("fake",), default="fake"),
    limits=Limits(cpu_seconds=2.0, wall_seconds=4.0),
    digest="9" * 64,
)


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def _sleeper(name: str) -> str:
    """A cell that sets ``name``, says it started (a file ``started`` in its workdir), then
    sleeps for a long (bounded) while."""
    return fenced(
        f"import time\n{name} = 'kept'\nopen('started', 'w').close()\n"
        "for _ in range(2000):\n    time.sleep(0.05)\n"
    )


def _when_exists(marker: Path, then: Callable[[], object]) -> threading.Thread:
    def wait() -> None:
        deadline = time.monotonic() + 60  # bounded: a cell that never starts fails the test
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        then()

    thread = threading.Thread(target=wait)
    thread.start()
    return thread


@pytest.fixture
def fake_session(tmp_path: Path) -> Iterator[tuple[Session, FakeBackend]]:
    backend = FakeBackend(lambda request: FakeReply(stdout="ran"))
    with Session(policy=FAKE_POLICY, backends={"fake": backend}, state_dir=tmp_path) as session:
        yield session, backend


def test_a_per_call_timeout_narrows_the_wall_limit(
    fake_session: tuple[Session, FakeBackend],
) -> None:
    session, backend = fake_session
    outcome = session.run(fenced("print(1)\n"), timeout=1.5)
    assert backend.calls[-1].limits.wall_seconds == 1.5
    assert outcome.event.limits.wall_seconds == 1.5  # the audit states the limit that applied
    assert backend.calls[-1].limits.cpu_seconds == 2.0


def test_a_per_call_timeout_never_widens_the_policy(
    fake_session: tuple[Session, FakeBackend],
) -> None:
    session, backend = fake_session
    session.run(fenced("print(1)\n"), timeout=60)
    assert backend.calls[-1].limits.wall_seconds == 4.0


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "5", True])
def test_a_bad_timeout_is_a_configuration_error(
    fake_session: tuple[Session, FakeBackend], bad: object
) -> None:
    session, backend = fake_session
    with pytest.raises(ConfigurationError, match="timeout="):
        session.run(fenced("print(1)\n"), timeout=bad)  # type: ignore[arg-type]
    assert backend.calls == []


def test_interrupt_reaches_the_backend_session_of_the_running_call(tmp_path: Path) -> None:
    seen: list[int] = []
    backend: FakeBackend

    def handler(request: ExecRequest) -> FakeReply:
        session.interrupt()  # from inside the call, as another thread would
        seen.append(backend.sessions[0].interrupts)
        return FakeReply()

    backend = FakeBackend(handler)
    with Session(policy=FAKE_POLICY, backends={"fake": backend}, state_dir=tmp_path) as session:
        session.run(fenced("print(1)\n"))
        session.interrupt()  # between calls: nothing runs, nothing is asked
    assert seen == [1]
    assert backend.sessions[0].interrupts == 1


def test_ctrl_c_during_a_native_step_records_it_and_keeps_the_session_in_step(
    tmp_path: Path,
) -> None:
    with Session(policy="default", state_dir=tmp_path / "state") as session:
        thread = _when_exists(session.workdir / "started", _thread.interrupt_main)
        with pytest.raises(KeyboardInterrupt):
            session.run(_sleeper("a"))
        thread.join()
        after = session.run(fenced("print(a, 'after')\n"))
        assert after.result is not None and after.result.status is ExecStatus.OK
        assert session.blobs.get(after.result.stdout) == b"kept after\n"
        events = AuditLog(session.audit.path).read()
    assert [event.status for event in events] == [ExecStatus.INTERRUPTED, ExecStatus.OK]


def test_cancelling_arun_interrupts_the_cell_and_keeps_the_session_in_step(
    tmp_path: Path,
) -> None:
    async def scenario(session: Session) -> bytes:
        step = asyncio.ensure_future(session.arun(_sleeper("b")))
        deadline = time.monotonic() + 60  # bounded: a cell that never starts fails the test
        while not (session.workdir / "started").exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        step.cancel()
        with pytest.raises(asyncio.CancelledError):
            await step
        after = await session.arun(fenced("print(b, 'after')\n"))
        assert after.result is not None
        return session.blobs.get(after.result.stdout)

    with Session(policy="default", state_dir=tmp_path / "state") as session:
        assert asyncio.run(scenario(session)) == b"kept after\n"
        events = AuditLog(session.audit.path).read()
    assert [event.status for event in events] == [ExecStatus.INTERRUPTED, ExecStatus.OK]


def test_wait_for_times_out_arun_without_losing_state(tmp_path: Path) -> None:
    async def scenario(session: Session) -> bytes:
        await session.arun(fenced("c = 'kept'\n"))
        # However far the step got when the timeout struck (even before its cell started), the
        # cell is interrupted and the state from before stays.
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(session.arun(_sleeper("d")), timeout=1.0)
        after = await session.arun(fenced("print(c)\n"))
        assert after.result is not None
        return session.blobs.get(after.result.stdout)

    with Session(policy="default", state_dir=tmp_path / "state") as session:
        assert asyncio.run(scenario(session)) == b"kept\n"
        assert session.statistics().audit_events == 3
