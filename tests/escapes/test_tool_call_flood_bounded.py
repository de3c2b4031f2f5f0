"""One step makes 200,000 tool calls; its audit line and the host's memory stay bounded.

Every call used to become an event held in the host and written to the step's audit line (58 MB
for 200,000 calls; the host grew by ~400 MB). The gateway records at most ``MAX_TOOL_EVENTS``
events a step and one ``LimitHit`` for the rest, whatever the code does. The host's resident
size is measured around the step: a resource bound, not a timing.
"""

from __future__ import annotations

import gc
from pathlib import Path

import psutil
from tool_support import fenced, tool_session

from safeexec.backends.native import NativeBackend
from safeexec.capabilities.gateway import MAX_TOOL_EVENTS, tool
from safeexec.model.values import ExecStatus, LimitHit

MiB = 1024 * 1024
AUDIT_LINE_BOUND = 1 * MiB
HOST_GROWTH_BOUND = 8 * MiB


def _flood(calls: int) -> str:
    return f"""
n = 0
while n < {calls}:
    try:
        money(n)
    except Exception:
        pass
    n += 1
print(n)
"""


def _last_audit_line(state_dir: Path) -> bytes:
    return (state_dir / "audit.jsonl").read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]


def test_a_step_of_200000_tool_calls_has_a_bounded_audit_line_and_host(
    backend: NativeBackend, tmp_path: Path
) -> None:
    # In the worker modes the calls run in the confined worker; in-process they run in this very
    # host under the operation budget, so there the flood is smaller but the bound the same.
    calls = 20_000 if type(backend).__name__ == "InProcessRestrictedHarness" else 200_000
    ran = [0]

    @tool(effects=["money"])
    def money(amount: int) -> int:
        ran[0] += 1
        return amount

    process = psutil.Process()
    # The limits are an outer bound only (the flood must finish even on a loaded machine).
    with tool_session(backend, tmp_path, money, tool_calls=1_000_000, seconds=300) as session:
        session.run(fenced("print('warm')"))  # the backend session exists before we measure
        gc.collect()
        before = process.memory_info().rss
        outcome = session.run(fenced(_flood(calls)))
        gc.collect()
        after = process.memory_info().rss
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK, outcome
        assert session.blobs.get(outcome.result.stdout).decode().split() == [str(calls)]
    assert ran[0] == calls  # within budget and grant, every call ran
    line = _last_audit_line(tmp_path)
    assert len(line) <= AUDIT_LINE_BOUND, len(line)
    effects = outcome.event.side_effects
    assert len(effects) == MAX_TOOL_EVENTS + 1
    assert effects[-1] == LimitHit(limit="tool_events", value=MAX_TOOL_EVENTS)
    assert after - before <= HOST_GROWTH_BOUND, (before, after)


def test_large_tool_results_leave_no_trace_in_the_audit_line(
    backend: NativeBackend, tmp_path: Path
) -> None:
    """Variant: result bytes are charged where they are made; the audit keeps only digests."""

    @tool(effects=["read"])
    def money(amount: int) -> str:
        return "x" * (256 * 1024)

    with tool_session(backend, tmp_path, money, tool_calls=1000) as session:
        outcome = session.run(fenced(_flood(400)))
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK, outcome
    assert len(_last_audit_line(tmp_path)) <= AUDIT_LINE_BOUND
