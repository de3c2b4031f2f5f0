"""A cell calls a tool thousands of times past its ``max_calls`` to bloat the host and the audit.

Every refused call used to become one ``ToolRefused`` event held in the host's memory and written
to the audit log, so one cell could grow both without bound. Refusals past a fixed number are
counted, not recorded (a ``LimitHit`` says so); the gateway holds that cap, for every backend.
The in-process restricted variant runs right here: its tools are host functions, which cannot be
handed to the child process the escape suite's in-process harness runs sessions in.
"""

from __future__ import annotations

from pathlib import Path

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.native import NativeBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.capabilities.gateway import MAX_TOOL_EVENTS, CapabilitySet, tool
from safeexec.model.values import ExecRequest, ExecStatus, LimitHit, Limits, ToolCalled, ToolRefused

ATTEMPTS = 2000
RECORDED_AT_MOST = MAX_TOOL_EVENTS


def test_refused_tool_calls_do_not_grow_the_events_without_bound(
    backend: NativeBackend, tmp_path: Path
) -> None:
    if type(backend).__name__ == "InProcessRestrictedHarness":
        backend = RestrictedBackend(in_process=True)  # type: ignore[assignment]
    ran: list[int] = []

    @tool()
    def ping(number: int) -> int:
        ran.append(number)
        return number

    caps = CapabilitySet()
    caps.grant(ping, max_calls=3)
    blobs = BlobStore(tmp_path / "blobs")
    workdir = tmp_path / "work"
    workdir.mkdir()
    session = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs, tools=caps))
    try:
        code = f"""
refused = 0
for number in range({ATTEMPTS}):
    try:
        ping(number)
    except Exception:
        refused += 1
print(refused)
"""
        result = session.run(ExecRequest(action_id="flood", code=code, limits=Limits()))
        assert result.status is ExecStatus.OK, result.message
        assert blobs.get(result.stdout).decode().split() == [str(ATTEMPTS - 3)]
        assert ran == [0, 1, 2]
        assert sum(isinstance(e, ToolCalled) for e in result.events) == 3
        assert sum(isinstance(e, ToolRefused) for e in result.events) == RECORDED_AT_MOST - 3
        assert LimitHit(limit="tool_events", value=RECORDED_AT_MOST) in result.events
        assert len(result.events) <= RECORDED_AT_MOST + 10
        assert caps.statistics().refusals == ATTEMPTS - 3  # the host still counted each one
    finally:
        session.close()
