"""Property tests: the front end is total on any text; accepted programs run within their plan
(calls per tool, iterations); refused programs never call a tool. Generated programs only ever
run inside the DSL backend."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dsl_support import granted, run, signatures
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from safeexec.backends.dsl import InProcessDslBackend
from safeexec.dsl.front import check_source
from safeexec.gate import check
from safeexec.model.values import Action, ExecStatus
from safeexec.policy.loader import load_policy

SIGNATURES = signatures()
POLICY = load_policy("default")

NUMBER = st.sampled_from(["0", "1", "2", "3", "2.5", "n", "len(xs)", "q.price", "count(xs)"])
LIST = st.sampled_from(
    [
        "xs",
        "[1, 2, 3]",
        "range(3)",
        'take(search_products(query="cable"), 2)',
        "take(xs, 1)",
        'map(["ACME", "INIT"], lambda t: get_quote(ticker=t).price)',
        "filter(xs, lambda v: v > 1)",
        "sort(xs)",
        "[]",
    ]
)
TOOL_STMT = st.sampled_from(
    [
        'q = get_quote(ticker="ACME")',
        'reserve(sku="C-100")',
        'print(get_fx_rate(base="USD", quote="EUR"))',
        'xs = map(take(search_products(query="usb"), 3), lambda p: p.price)',
    ]
)


@st.composite
def expression(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(NUMBER)
    if kind == 1:
        op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        return f"{draw(NUMBER)} {op} {draw(NUMBER)}"
    if kind == 2:
        return f"sum({draw(LIST)})"
    if kind == 3:
        return f"{draw(NUMBER)} if {draw(NUMBER)} > {draw(NUMBER)} else {draw(NUMBER)}"
    return f'len(f"{{{draw(NUMBER)}}}")'


@st.composite
def statements(draw: st.DrawFn, depth: int = 0) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 5 if depth < 2 else 2))
        if kind == 0:
            out.append(f"n = {draw(expression())}")
        elif kind == 1:
            out.append(draw(TOOL_STMT))
        elif kind == 2:
            out.append(f"n += {draw(expression())}")
        elif kind == 3:
            out.append(f"for v in {draw(LIST)}:")
            out.extend("    " + line for line in draw(statements(depth + 1)))
        elif kind == 4:
            out.append(f"if {draw(expression())} > {draw(NUMBER)}:")
            out.extend("    " + line for line in draw(statements(depth + 1)))
            if draw(st.booleans()):
                out.append("else:")
                out.extend("    " + line for line in draw(statements(depth + 1)))
        else:
            out.append(f"xs = {draw(LIST)}")
    return out


@st.composite
def programs(draw: st.DrawFn) -> str:
    head = ["n = 0", "xs = [1, 2, 3]", 'q = get_quote(ticker="INIT")']
    return "\n".join([*head, *draw(statements()), f"return {draw(expression())}"]) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_the_front_end_is_total_on_any_text(text: str) -> None:
    result = check_source(text, SIGNATURES)
    assert result.findings, "every result carries at least one finding or the plan record"
    gate = check(Action.create(text, language="dsl"), POLICY, backend="dsl", tools=SIGNATURES)
    assert not [f for f in gate.findings if f.rule.startswith("SX9")]


@settings(max_examples=200, deadline=None)
@given(programs())
def test_the_checker_terminates_and_never_crashes_on_generated_programs(source: str) -> None:
    gate = check(Action.create(source, language="dsl"), POLICY, backend="dsl", tools=SIGNATURES)
    assert not [f for f in gate.findings if f.rule.startswith("SX9")]
    assert gate.dsl is not None and gate.dsl.program is not None  # they all parse


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(programs())
def test_accepted_programs_run_within_their_plan(source: str) -> None:
    result = check_source(source, SIGNATURES)
    assume(result.accepted)
    assert result.plan is not None
    backend = InProcessDslBackend()  # the runtime's counts are read back in-process
    with tempfile.TemporaryDirectory() as tmp:
        caps = granted()
        ran = run(source, Path(tmp), caps=caps, backend=backend)
    assert ran.result.status in (ExecStatus.OK, ExecStatus.ERROR), ran.result.message
    assert "DslLimitError" not in ran.result.message  # the plan's bounds were never reached
    observed: dict[str, int] = {}
    for event in ran.result.events:
        if event.kind == "tool_called":
            observed[event.tool] = observed.get(event.tool, 0) + 1
    planned = {t.name: t.max_calls for t in result.plan.tools}
    assert all(count <= planned[name] for name, count in observed.items())
    assert ran.runtime is not None and ran.plan == result.plan  # the backend planned the same
    assert ran.runtime.iterations <= result.plan.iterations
    assert ran.runtime.calls == observed


@settings(max_examples=5, deadline=None)
@given(st.lists(programs(), min_size=40, max_size=40))
def test_the_generator_makes_mostly_accepted_programs(samples: list[str]) -> None:
    # Guards the two tests above against testing nothing: most generated programs are accepted.
    accepted = sum(check_source(s, SIGNATURES).accepted for s in samples)
    assert accepted >= 20, accepted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(programs(), st.sampled_from(["reserve", "get_quote", "search_products"]))
def test_refused_programs_never_call_a_tool(source: str, tool: str) -> None:
    tight = {"reserve": 0, "get_quote": 1, "search_products": 0}
    caps = granted({tool: tight[tool]})
    result = check_source(source, signatures({tool: tight[tool]}))
    assume(not result.accepted)
    with tempfile.TemporaryDirectory() as tmp:
        ran = run(source, Path(tmp), caps=caps)
    assert ran.result.status is ExecStatus.ERROR
    assert caps.statistics().calls == 0 and not ran.result.events
