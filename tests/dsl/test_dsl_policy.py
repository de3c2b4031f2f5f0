"""The DSL under a policy: ``[dsl]`` limits (validated by the loader, reaching the backend through
``SessionSpec.dsl``) and ``[approval] effects`` (the plan says which effects need approval, and the
approver gets the plan before anything runs)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from dsl_support import EXAMPLES, example_specs, signatures

from safeexec.dsl.limits import DslLimits
from safeexec.dsl.plan import plan_of
from safeexec.errors import PolicyError
from safeexec.gate import check
from safeexec.model.values import Action, ActionSource, Decision, ExecStatus, Verdict
from safeexec.policy.loader import load_policy, parse_policy_text
from safeexec.policy.schema import ApprovalConfig, CapabilityConfig, Policy
from safeexec.session.session import Session

# shopping: search (no effect) then reserve (money); hotels: no effects; save: write.
SHOPPING = (EXAMPLES / "shopping.dsl").read_text(encoding="utf-8")
HOTELS = (EXAMPLES / "travel_compare_hotels.dsl").read_text(encoding="utf-8")
SAVE = (EXAMPLES / "decoding_save.dsl").read_text(encoding="utf-8")


def policy(*, effects: tuple[str, ...] = (), dsl: DslLimits | None = None) -> Policy:
    caps = tuple(CapabilityConfig(tool=s.name) for s in example_specs())
    return dataclasses.replace(
        load_policy("default"),
        capabilities=caps,
        approval=ApprovalConfig(effects=effects),
        dsl=dsl or DslLimits(),
    )


def gate(source: str, p: Policy) -> Decision:
    action = Action.create(source, source=ActionSource.RAW, language="dsl")
    return check(action, p, backend="dsl", tools=signatures({})).decision


# -- the loader -----------------------------------------------------------------------------


def test_the_dsl_and_approval_tables_load_with_documented_defaults() -> None:
    loaded = parse_policy_text(
        '[backends]\nallowed = ["dsl"]\ndefault = "dsl"\n'
        '[dsl]\nmax_items = 50\nmax_tool_calls = 12\n[approval]\neffects = ["money", "write"]\n'
    )
    assert loaded.dsl == DslLimits(max_items=50, max_tool_calls=12)
    assert loaded.dsl.max_iterations == 1_000_000 and loaded.dsl.max_text_chars == 1_000_000
    assert loaded.approval.effects == ("money", "write")
    default = load_policy("default")
    assert default.dsl == DslLimits() and default.dsl.max_tool_calls is None
    assert default.approval.effects == ()


@pytest.mark.parametrize(
    ("text", "pointer", "says"),
    [
        ("[dsl]\nmax_item = 5\n", "/dsl/max_item", "did you mean 'max_items'?"),
        ("[dsl]\nmax_iterations = -1\n", "/dsl/max_iterations", "non-negative integer"),
        ('[dsl]\nmax_tool_calls = "ten"\n', "/dsl/max_tool_calls", "non-negative integer"),
        ('[approval]\neffects = ["spend"]\n', "/approval/effects/0", "read, write, network, money"),
        ("[approval]\neffect = []\n", "/approval/effect", "did you mean 'effects'?"),
    ],
)
def test_the_loader_refuses_bad_dsl_and_approval_keys(text: str, pointer: str, says: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy_text(text)
    assert caught.value.pointer == pointer
    assert says in str(caught.value)


# -- [dsl] limits ---------------------------------------------------------------------------


def test_a_plan_over_the_policys_tool_call_limit_is_refused_saying_how_to_proceed() -> None:
    source = 'for p in take(search_products(query="c"), 5):\n    get_quote(ticker=p.sku)\nreturn 1'
    refused = gate(source, policy(dsl=DslLimits(max_tool_calls=4)))
    assert refused.verdict is Verdict.DENY
    (finding,) = [f for f in refused.findings if f.rule == "SX707"]
    assert "6 tool calls" in finding.message and "max_tool_calls = 4" in finding.message
    assert "take(xs, n)" in finding.message and "raise the limit" in finding.message
    assert gate(source, policy(dsl=DslLimits(max_tool_calls=6))).verdict is Verdict.ALLOW


def test_the_policys_iteration_limit_is_the_one_the_plan_is_checked_against() -> None:
    source = "n = 0\nfor i in range(200):\n    n += i\nreturn n"
    refused = gate(source, policy(dsl=DslLimits(max_iterations=100)))
    (finding,) = [f for f in refused.findings if f.rule == "SX703"]
    assert "[dsl] max_iterations" in finding.message
    assert gate(source, policy()).verdict is Verdict.ALLOW


def test_the_policys_item_cap_reaches_the_backend_through_the_session(tmp_path: Path) -> None:
    source = 'items = search_products(query="usb-c cable")\nreturn len(items)'
    with Session(policy=policy(), mode="dsl", state_dir=tmp_path / "a") as wide:
        for spec in example_specs():
            wide.grant(spec)
        assert wide.run(source).result.status is ExecStatus.OK  # type: ignore[union-attr]
    with Session(
        policy=policy(dsl=DslLimits(max_items=2)), mode="dsl", state_dir=tmp_path / "b"
    ) as narrow:
        for spec in example_specs():
            narrow.grant(spec)
        result = narrow.run(source).result
        assert result is not None and result.status is ExecStatus.LIMIT_EXCEEDED
        assert "more than the cap of 2" in result.message


# -- approval per effect --------------------------------------------------------------------


def test_the_plan_says_which_effects_need_approval() -> None:
    decision = gate(SHOPPING, policy(effects=("money",)))
    assert decision.verdict is Verdict.NEEDS_APPROVAL
    (card,) = [f for f in decision.findings if f.rule == "SX710"]
    assert "`money`" in card.message and "`reserve`" in card.message
    plan = plan_of(decision.findings)
    assert plan is not None and plan["approval"] == {"effects": ["money"], "tools": ["reserve"]}
    tools = {t["name"]: t for t in plan["tools"]}  # type: ignore[union-attr,index]
    assert tools["reserve"]["approval_effects"] == ["money"] and tools["reserve"]["needs_approval"]
    assert not tools["search_products"]["needs_approval"]
    (record,) = [f for f in decision.findings if f.rule == "SX790"]
    assert "reserve: ≤ 1 call, effect money, needs approval (effect money)" in record.message
    assert "needs approval: effects money; tools reserve" in record.message


@pytest.mark.parametrize(
    ("source", "effects"),
    [(HOTELS, ("money", "write", "network", "read")), (SHOPPING, ("write",)), (SAVE, ("money",))],
    ids=["no-effects", "money-not-asked", "write-not-asked"],
)
def test_a_plan_without_an_effect_needing_approval_is_allowed(
    source: str, effects: tuple[str, ...]
) -> None:
    decision = gate(source, policy(effects=effects))
    assert decision.verdict is Verdict.ALLOW
    assert not [f for f in decision.findings if f.rule == "SX710"]
    plan = plan_of(decision.findings)
    assert plan is not None and plan["approval"] == {"effects": [], "tools": []}


def test_the_approver_gets_the_plans_effects_before_any_tool_runs(tmp_path: Path) -> None:
    asked: list[tuple[object, int]] = []

    def approver(decision: Decision, action: Action) -> bool:
        plan = plan_of(decision.findings)
        assert plan is not None
        asked.append((plan["approval"], session.statistics().tool_calls))
        return True

    with Session(
        policy=policy(effects=("money",)), mode="dsl", state_dir=tmp_path, approver=approver,
        tool_approver=lambda request: True,
    ) as session:  # fmt: skip
        for spec in example_specs():
            session.grant(spec)
        assert session._capabilities.get("reserve").requires_approval  # type: ignore[union-attr]
        assert not session._capabilities.get("search_products").requires_approval  # type: ignore[union-attr]
        outcome = session.run(SHOPPING)
        assert asked == [({"effects": ["money"], "tools": ["reserve"]}, 0)]
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK
        assert session.run(HOTELS).decision.verdict is Verdict.ALLOW
        assert len(asked) == 1  # a plan without money never asks


def test_a_refused_plan_approval_runs_no_tool(tmp_path: Path) -> None:
    with Session(
        policy=policy(effects=("money",)), mode="dsl", state_dir=tmp_path,
        approver=lambda d, a: False,
    ) as session:  # fmt: skip
        for spec in example_specs():
            session.grant(spec)
        outcome = session.run(SHOPPING)
        assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
        assert session.statistics().tool_calls == 0
        logged = json.loads(session.audit.path.read_text().splitlines()[-1])
        assert any(f["rule"] == "SX710" for f in logged["findings"])


# -- approval per effect: every way a tool's effects reach the plan ----------------------------


def test_each_tool_is_asked_about_only_for_the_effects_the_policy_names() -> None:
    both = 'code = reserve(sku="a")\nsave_note(title="t", body=code)\nreturn code'
    plan = plan_of(gate(both, policy(effects=("write",))).findings)
    assert plan is not None and plan["approval"] == {"effects": ["write"], "tools": ["save_note"]}
    plan = plan_of(gate(both, policy(effects=("money", "write"))).findings)
    assert plan is not None
    assert plan["approval"] == {"effects": ["money", "write"], "tools": ["reserve", "save_note"]}


def test_a_plan_whose_tool_effects_are_unknown_needs_approval_when_the_policy_asks_any() -> None:
    # No specs: the gate knows the policy's tools by name only, so `reserve` may spend money.
    action = Action.create(SHOPPING, source=ActionSource.RAW, language="dsl")
    asked = check(action, policy(effects=("money",)), backend="dsl").decision
    assert asked.verdict is Verdict.NEEDS_APPROVAL
    (card,) = [f for f in asked.findings if f.rule == "SX710"]
    assert "are unknown here" in card.message and "`reserve`" in card.message
    plan = plan_of(asked.findings)
    assert plan is not None
    tools = {t["name"]: t for t in plan["tools"]}  # type: ignore[union-attr,index]
    assert tools["reserve"]["effects_known"] is False
    assert tools["reserve"]["approval_effects"] == ["money"]
    # With no effect needing approval in the policy, unknown effects ask nothing.
    assert check(action, policy(), backend="dsl").decision.verdict is Verdict.ALLOW


def test_a_grant_that_requires_approval_asks_without_an_effect_named() -> None:
    caps = tuple(
        CapabilityConfig(tool=s.name, requires_approval=s.name == "search_hotels")
        for s in example_specs()
    )
    p = dataclasses.replace(policy(), capabilities=caps)
    tools = tuple(
        dataclasses.replace(s, requires_approval=s.name == "search_hotels") for s in signatures({})
    )
    action = Action.create(HOTELS, source=ActionSource.RAW, language="dsl")
    decision = check(action, p, backend="dsl", tools=tools).decision
    assert decision.verdict is Verdict.NEEDS_APPROVAL
    (card,) = [f for f in decision.findings if f.rule == "SX710"]
    assert "whose grant requires approval" in card.message
    plan = plan_of(decision.findings)
    assert plan is not None and plan["approval"] == {"effects": [], "tools": ["search_hotels"]}


def test_the_session_asks_for_an_effect_the_grant_itself_does_not_flag(tmp_path: Path) -> None:
    # The pack's [capabilities] entries set no requires_approval: [approval] effects alone asks.
    seen: list[Decision] = []
    with Session(
        policy=policy(effects=("write",)), mode="dsl", state_dir=tmp_path,
        approver=lambda d, a: seen.append(d) is None and False,
    ) as session:  # fmt: skip
        for spec in example_specs():
            session.grant(spec)
        outcome = session.run(SAVE)
        assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
        assert session.statistics().tool_calls == 0
    (decision,) = seen
    plan = plan_of(decision.findings)
    assert plan is not None and plan["approval"]["tools"] == ["save_note"]  # type: ignore[index,call-overload]


# -- an approved plan grants exactly its planned calls, for its one run -----------------------


def _asking(policy_: Policy, tmp_path: Path, *, plan_ok: bool, calls: list[object]) -> Session:
    def tool_approver(request: object) -> bool:
        calls.append(request)
        return False  # a second prompt would refuse the call

    session = Session(
        policy=policy_, mode="dsl", state_dir=tmp_path,
        approver=lambda d, a: plan_ok, tool_approver=tool_approver,  # type: ignore[arg-type]
    )  # fmt: skip
    for spec in example_specs():
        session.grant(spec)
    return session


def test_an_approved_plan_runs_its_calls_without_a_second_prompt(tmp_path: Path) -> None:
    asked: list[object] = []
    with _asking(policy(effects=("money",)), tmp_path, plan_ok=True, calls=asked) as session:
        outcome = session.run(SHOPPING)
        assert outcome.decision.verdict is Verdict.NEEDS_APPROVAL  # approved, and logged as asked
        assert outcome.result is not None and outcome.result.status is ExecStatus.OK
        assert asked == [] and "confirmation" in outcome.observation.text
        assert session.statistics().tool_calls == 2  # search_products and reserve, as planned


def test_a_denied_plan_runs_nothing_and_asks_about_no_call(tmp_path: Path) -> None:
    asked: list[object] = []
    with _asking(policy(effects=("money",)), tmp_path, plan_ok=False, calls=asked) as session:
        outcome = session.run(SHOPPING)
        assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
        assert asked == [] and session.statistics().tool_calls == 0


def test_planned_calls_grant_the_bound_and_the_constant_arguments_only() -> None:
    from safeexec.capabilities.gateway import CapabilitySet
    from safeexec.dsl.approval import PlannedCalls

    plan = plan_of(
        gate('a = reserve(sku="A", quantity=1)\nreturn a', policy(effects=("money",))).findings
    )
    assert plan is not None
    asked: list[object] = []
    caps = CapabilitySet(approve=lambda request: asked.append(request) is None and False)
    reserve = next(s for s in example_specs() if s.name == "reserve")
    caps.grant(reserve, requires_approval=True)

    def call(sku: str, quantity: int = 1) -> bool:
        return caps.invoke("reserve", {"args": [], "kwargs": {"sku": sku, "quantity": quantity}}).ok

    caps.begin_step(approved=PlannedCalls(plan))
    assert not call("B") and len(asked) == 1  # another constant: asked (and refused)
    assert not call("A", quantity=2) and len(asked) == 2
    assert call("A") and len(asked) == 2  # the planned call: not asked
    assert not call("A") and len(asked) == 3  # past the plan's bound of one: asked again
    caps.begin_step(approved=PlannedCalls(plan))
    assert call("A") and len(asked) == 3
    caps.begin_step()  # a step without an approved plan grants nothing
    assert not call("A") and len(asked) == 4


def test_a_computed_argument_is_granted_as_planned_and_no_unplanned_argument() -> None:
    from safeexec.capabilities.gateway import ApprovalRequest
    from safeexec.dsl.approval import PlannedCalls

    plan = plan_of(gate(SHOPPING, policy(effects=("money",))).findings)
    assert plan is not None
    granted_calls = PlannedCalls(plan)

    def request(tool: str, arguments: dict[str, object]) -> ApprovalRequest:
        return ApprovalRequest(tool=tool, capability_id="c", arguments=arguments, effects=())  # type: ignore[arg-type]

    assert not granted_calls(request("reserve", {"sku": "X", "quantity": 2}))  # quantity=1 planned
    assert not granted_calls(request("book", {"item_id": "X", "kind": "hotel"}))  # not planned
    assert granted_calls(request("reserve", {"sku": "any-sku", "quantity": 1}))  # sku computed
    assert not granted_calls(request("reserve", {"sku": "any-sku", "quantity": 1}))  # bound 1


def test_an_approver_that_relies_on_per_call_checks_grants_no_call(tmp_path: Path) -> None:
    asked: list[object] = []
    with _asking(policy(effects=("money",)), tmp_path, plan_ok=True, calls=asked) as session:
        plan_approver = session._approver
        plan_approver.grants_plan = False  # type: ignore[union-attr]
        outcome = session.run(SHOPPING)
        assert outcome.result is not None and outcome.result.status is ExecStatus.ERROR
        assert len(asked) == 1  # the call was asked about, and refused
