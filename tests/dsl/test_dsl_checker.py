"""The checker and the plan: names, types against the tools' schemas, bounds compared with the
grants before anything runs; the escape ideas, translated to the DSL, refused statically."""

from __future__ import annotations

import json

import pytest
from dsl_support import front, signatures

from safeexec.dsl.front import check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.signatures import ToolSignature
from safeexec.model.values import Enforcement


def rules(source: str, **kwargs: object) -> list[str]:
    result = check_source(source, signatures(), **kwargs)  # type: ignore[arg-type]
    return [f.rule for f in result.findings if f.enforcement is Enforcement.DENY]


def messages(source: str) -> list[str]:
    return [f.message for f in front(source).findings if f.enforcement is Enforcement.DENY]


def test_unknown_tool_gets_a_did_you_mean_with_a_caret() -> None:
    result = front('code = reserv(sku="C-100")\nreturn code')
    (finding,) = result.findings
    assert finding.rule == "SX701"
    assert finding.message == "unknown tool or op `reserv`; did you mean `reserve`?"
    assert finding.span is not None and (finding.span.start_line, finding.span.start_column) == (
        1,
        8,
    )
    assert finding.evidence == 'code = reserv(sku="C-100")\n       ^'


def test_unknown_fields_arguments_and_choices_get_suggestions() -> None:
    found = messages(
        'items = search_products(query="cable", max_result=3)\n'
        "p = first(items)\n"
        'ref = book(item_id=p.skuu, kind="flihgt")\n'
        "return ref"
    )
    assert (
        "unknown argument of `search_products` `max_result`; did you mean `max_results`?" in found
    )
    assert "unknown field `skuu`; did you mean `sku`?" in found
    assert any("'flihgt' is not allowed; did you mean 'flight'?" in m for m in found)


def test_arguments_are_checked_against_the_tool_schema() -> None:
    assert rules("x = search_products(query=3)\nreturn x") == ["SX702"]
    assert rules('x = search_products(query="a", max_results="3")\nreturn x') == ["SX702"]
    assert rules("x = search_products()\nreturn x") == ["SX702"]  # query is required
    assert rules('x = search_products("cable")\nreturn x') == ["SX702"]  # by name only
    assert rules("x = get_quote(ticker=None)\nreturn x") == ["SX702"]
    assert rules('x = search_hotels(city="BER", max_nightly=100)\nreturn x') == []  # int fits float


def test_operators_and_ops_are_type_checked() -> None:
    assert rules('x = 1 + "a"\nreturn x') == ["SX702"]
    assert rules('x = "a" < 1\nreturn x') == ["SX702"]
    assert rules("x = len(3)\nreturn x") == ["SX702"]
    assert rules("x = map([1, 2], 3)\nreturn x") == ["SX702"]
    assert rules("x = map([1, 2], lambda a, b: a)\nreturn x") == ["SX702"]
    assert rules("for c in 3:\n    print(c)\nreturn 1") == ["SX702"]
    assert rules('x = f"{1:>99999}"\nreturn x') == ["SX702"]


def test_structure_rules() -> None:
    assert rules("return 1\nx = 2") == ["SX706"]
    assert rules("reserve = 1\nreturn reserve") == ["SX706", "SX706"]
    assert rules("f = search_products\nreturn 1") == ["SX706"]
    assert rules("for i in range(3):\n    i = 2\nreturn 1") == ["SX706"]
    assert rules("x = y\nreturn x") == ["SX701"]
    assert rules("if True:\n    return 1") == ["SX706"]


def test_names_bound_in_one_branch_only_are_not_visible_after_it() -> None:
    assert rules("if True:\n    x = 1\nreturn x") == ["SX701"]
    assert rules("if True:\n    x = 1\nelse:\n    x = 2.5\nreturn x") == []
    assert rules("for i in range(2):\n    y = i\nreturn y") == ["SX701"]


def test_calls_that_could_exceed_max_calls_are_refused_before_running() -> None:
    over = 'for p in search_products(query="cable"):\n    reserve(sku=p.sku)\nreturn 1'
    result = front(over)
    (denied,) = [f for f in result.findings if f.enforcement is Enforcement.DENY]
    assert denied.rule == "SX704"
    assert "`reserve` may be called 1000 times but its grant allows 3" in denied.message
    bounded = over.replace(
        'search_products(query="cable")', 'take(search_products(query="cable"), 3)'
    )
    assert rules(bounded) == []


def test_calls_in_branches_count_the_larger_branch() -> None:
    source = (
        'xs = take(search_products(query="c"), 2)\n'
        "if len(xs) > 1:\n"
        "    for p in xs:\n"
        "        reserve(sku=p.sku)\n"
        "else:\n"
        '    reserve(sku="x")\n'
        "return 1"
    )
    plan = front(source).plan
    assert plan is not None
    assert {t.name: t.max_calls for t in plan.tools} == {"search_products": 1, "reserve": 2}


def test_the_budget_and_the_iteration_limit_are_compared_too() -> None:
    three = (
        'a = get_quote(ticker="A")\nb = get_quote(ticker="B")\nc = get_quote(ticker="C")\nreturn 1'
    )
    assert rules(three, tool_calls_left=2) == ["SX705"]
    assert rules(three, tool_calls_left=3) == []
    nested = "n = 0\nfor i in range(2000):\n    for j in range(1000):\n        n += 1\nreturn n"
    assert rules(nested) == ["SX703"]
    assert rules(nested, limits=DslLimits(max_iterations=10_000_000)) == []


def test_the_plan_lists_tools_bounds_effects_and_constant_arguments() -> None:
    result = front(
        'items = search_products(query="usb-c cable", max_results=20)\n'
        "ok = filter(items, lambda p: p.in_stock)\n"
        "best = min_by(ok, lambda p: p.price)\n"
        "return reserve(sku=best.sku, quantity=1)\n"
    )
    assert result.accepted and result.plan is not None
    plan = result.plan.to_json()
    assert [t["name"] for t in plan["tools"]] == ["search_products", "reserve"]  # type: ignore[index]
    reserve = plan["tools"][1]  # type: ignore[index]
    assert reserve["max_calls"] == 1 and reserve["effects"] == ["money"]
    assert reserve["granted_calls"] == 3
    assert reserve["calls"] == [
        {"line": 4, "times": 1, "effects": ["money"], "arguments": {"quantity": 1},
         "computed": ["sku"]}
    ]  # fmt: skip
    assert plan["effects"] == ["money"] and plan["total_calls"] == 2
    assert plan["iterations"] == 2000 and plan["max_items"] == 1000
    assert "reserve: ≤ 1 call (granted 3), effect money" in result.plan.to_text()
    (record,) = [f for f in result.findings if f.rule == "SX790"]
    assert json.loads(record.evidence) == plan


def test_a_tool_whose_grant_needs_approval_makes_the_plan_need_approval() -> None:
    tools = [ToolSignature(name="send_email", requires_approval=True, effects=("network",))]
    result = check_source('send_email(to="a", body="b")\nreturn 1', tools)
    approval = [f for f in result.findings if f.enforcement is Enforcement.APPROVE]
    assert [f.rule for f in approval] == ["SX710"]
    assert json.loads(approval[0].evidence)["tools"][0]["name"] == "send_email"


@pytest.mark.parametrize(
    ("idea", "source", "rule"),
    [
        ("reach an attribute", "x = search_products.__globals__", "SX700"),
        (
            "reach a dunder field",
            'p = first(search_products(query="a"))\nreturn p.__class__',
            "SX700",
        ),
        ("build a name", 'f = getattr(search_products, "fun" + "ction")\nreturn f', "SX701"),
        ("evaluate text", 'return eval("1 + 1")', "SX701"),
        ("import", "import os\nreturn os", "SX700"),
        ("import by call", 'm = __import__("os")\nreturn m', "SX700"),
        ("open a file", 'return open("/etc/passwd")', "SX701"),
        ("loop without bound", "while True:\n    x = 1", "SX700"),
        ("loop very long", "n = 0\nfor i in range(1000000000):\n    n += 1\nreturn n", "SX703"),
        ("recurse", "f = lambda x: f(x)\nreturn f(1)", "SX700"),
        ("call a tool held in a name", "g = reserve\nreturn g(sku=1)", "SX706"),
        ("exceed call limits", 'for i in range(4):\n    reserve(sku="a")\nreturn 1', "SX704"),
        ("call an ungranted tool", 'return run_shell(command="id")', "SX701"),
        ("shadow a runtime helper", "dsl_loop = 1\nreturn dsl_loop", "SX706"),
        ("format-string walk", 'return f"{search_products.__class__}"', "SX700"),
        ("method on a value", 'return "a".join(["b"])', "SX700"),
    ],
)
def test_escape_ideas_translated_to_the_dsl_are_refused_statically(
    idea: str, source: str, rule: str
) -> None:
    result = front(source)
    denied = [f.rule for f in result.findings if f.enforcement is Enforcement.DENY]
    assert not result.accepted, idea
    assert denied and denied[0] == rule, (idea, denied)


def test_indexing_a_record_by_a_literal_checks_the_field_and_counts_the_call_once() -> None:
    result = front('price = get_quote(ticker="ACME")["price"]\nreturn price')
    assert result.accepted and result.plan is not None
    (tool,) = result.plan.tools
    assert tool.max_calls == 1 and len(tool.sites) == 1
    assert messages('return get_quote(ticker="ACME")["prise"]') == [
        "unknown field `prise`; did you mean `price`?"
    ]


def test_a_name_rebound_in_a_loop_that_may_not_run_keeps_its_earlier_bound() -> None:
    # The loop over [] never runs, so `xs` still holds three items when they are counted.
    source = (
        "xs = [1, 2, 3]\n"
        "for v in []:\n"
        '    xs = take(search_products(query="cable"), 2)\n'
        "return count(xs)\n"
    )
    plan = front(source).plan
    assert plan is not None and plan.iterations >= 3
