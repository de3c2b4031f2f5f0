"""One step spends the session's whole tool budget and keeps calling (found-item 4).

With ``[budget] tool_calls = 5`` and a grant without ``max_calls``, the budget used to be charged
after the step: one step called a ``money`` tool 200,000 times and only the next step was refused.
The gateway now charges it per call, so the sixth call in the same step is refused.
"""

from __future__ import annotations

from pathlib import Path

from tool_support import fenced, tool_session

from safeexec.backends.native import NativeBackend
from safeexec.capabilities.gateway import ApprovalRequest, tool
from safeexec.model.values import ExecStatus, Verdict

ATTEMPTS = 2000
# A while loop: no static estimate bounds its tool calls, so only the gateway can.
_SPENDER = f"""
n = ok = 0
while n < {ATTEMPTS}:
    try:
        pay(1)
        ok += 1
    except Exception:
        pass
    n += 1
print(ok)
"""


def test_calls_past_the_budget_are_refused_in_the_same_step(
    backend: NativeBackend, tmp_path: Path
) -> None:
    paid: list[int] = []

    @tool(effects=["money"])
    def pay(amount: int) -> int:
        paid.append(amount)
        return amount

    with tool_session(backend, tmp_path, pay, tool_calls=5) as session:
        outcome = session.run(fenced(_SPENDER))
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK, outcome
        assert session.blobs.get(outcome.result.stdout).decode().split() == ["5"]
        assert paid == [1] * 5
        kinds = [e.kind for e in outcome.event.side_effects]
        assert kinds.count("tool_called") == 5
        assert session.run(fenced("print(1)")).decision.verdict is Verdict.DENY  # SX510 next


def test_threads_calling_at_once_cannot_overspend(backend: NativeBackend, tmp_path: Path) -> None:
    """Variant: in native mode, eight threads race for the last calls of the budget."""
    paid: list[int] = []

    @tool(effects=["money"])
    def pay(amount: int) -> int:
        paid.append(amount)
        return amount

    code = """
import threading
def spend():
    for _ in range(200):
        try:
            pay(1)
        except Exception:
            pass
threads = [threading.Thread(target=spend) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done")
"""
    with tool_session(backend, tmp_path, pay, tool_calls=7) as session:
        session.run(fenced(code))
    assert len(paid) <= 7


def test_a_spent_budget_asks_the_approver_nothing(backend: NativeBackend, tmp_path: Path) -> None:
    """Variant: approval prompts are a budget too; once the calls are spent nobody is asked."""
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    @tool(effects=["money"])
    def pay(amount: int) -> int:
        return amount

    with tool_session(backend, tmp_path, pay, tool_calls=3, tool_approver=approve) as session:
        session.grant(pay, requires_approval=True)
        session.run(fenced(_SPENDER))
    assert len(asked) == 3
