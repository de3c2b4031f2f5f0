"""What approving a DSL plan grants: exactly its planned calls, for that one run.

The approver of an ``SX710`` step saw the plan — per tool its call bound and, per call site, the
constant arguments (``computed`` ones it saw as ``<computed>``). Once approved, a call of a tool
the plan says needs approval is approved without asking again when it fits a planned call
site (its constant arguments equal, no argument the site does not pass) and the tool's planned
bound is not yet spent. Any other call asks the tool approver as before (or is refused). The
gateway consults it through ``CapabilitySet.begin_step(approved=...)``, which the session sets
for the approved step's run only. Imports nothing heavy: Python-mode sessions load it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from safeexec.capabilities.gateway import ApprovalRequest
from safeexec.dsl.plan import plan_of
from safeexec.dsl.rules import NEEDS_APPROVAL
from safeexec.model.codec import JSONValue
from safeexec.model.values import Decision, Verdict

__all__ = ["PlannedCalls", "approved_plan_calls"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Site:
    constants: Mapping[str, JSONValue]
    computed: frozenset[str]

    def fits(self, arguments: Mapping[str, JSONValue]) -> bool:
        if not set(arguments) <= set(self.constants) | self.computed:
            return False
        return all(k in arguments and arguments[k] == v for k, v in self.constants.items())


class PlannedCalls:
    """The calls one approved plan grants (see the module docstring); a gateway's per-step
    ``approved`` callable. Each approved call spends one of its tool's planned calls."""

    def __init__(self, plan: Mapping[str, JSONValue]) -> None:
        self._left: dict[str, int] = {}
        self._sites: dict[str, tuple[_Site, ...]] = {}
        self._lock = threading.Lock()
        tools = plan.get("tools")
        for tool in tools if isinstance(tools, list) else ():
            if not isinstance(tool, dict) or tool.get("needs_approval") is not True:
                continue
            name, bound, calls = tool.get("name"), tool.get("max_calls"), tool.get("calls")
            if not isinstance(name, str) or type(bound) is not int or not isinstance(calls, list):
                continue
            sites = []
            for call in calls:
                if not isinstance(call, dict):
                    continue
                constants, computed = call.get("arguments"), call.get("computed")
                if isinstance(constants, dict) and isinstance(computed, list):
                    sites.append(_Site(constants=constants, computed=frozenset(map(str, computed))))
            self._left[name] = bound
            self._sites[name] = tuple(sites)

    def __call__(self, request: ApprovalRequest) -> bool:
        arguments = request.arguments
        if not isinstance(arguments, dict):
            return False
        with self._lock:
            left = self._left.get(request.tool, 0)
            if left <= 0 or not any(s.fits(arguments) for s in self._sites[request.tool]):
                return False
            self._left[request.tool] = left - 1
            return True


def approved_plan_calls(
    decision: Decision, approver: object
) -> Callable[[ApprovalRequest], bool] | None:
    """The planned calls an approved DSL step's run may make unasked, or ``None``.

    ``decision`` is one that runs: ``needs_approval`` there means its approver said yes. An
    approver whose yes is not a human's look at the plan (it sets ``grants_plan = False``, as
    the harness's task approver does) grants nothing: each call is asked about as before."""
    if (
        decision.verdict is not Verdict.NEEDS_APPROVAL
        or getattr(approver, "grants_plan", True) is not True
    ):
        return None
    if not any(f.rule == NEEDS_APPROVAL.id for f in decision.findings):
        return None
    plan = plan_of(decision.findings)
    return None if plan is None else PlannedCalls(plan)
