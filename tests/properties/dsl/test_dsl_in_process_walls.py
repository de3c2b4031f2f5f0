"""The claims dsl/SPEC.md's "Where a DSL program runs" rests on, for the evaluator in the host
process: what the restricted in-process mode cannot stop, the DSL either cannot express or stops.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from dsl_support import EXAMPLES, front, granted, run
from hypothesis import given, settings
from test_dsl_properties import programs

from safeexec.backends.base import SessionSpec
from safeexec.backends.dsl import DslBackend
from safeexec.blobs import BlobStore
from safeexec.dsl.compiler import CompiledShapeError, compile_code, compile_program
from safeexec.dsl.front import check_source, forget_checks
from safeexec.dsl.signatures import signatures_of
from safeexec.model import ExecRequest, ExecStatus, Limits

DEEP = 'x = {"a": []}\ny = x\nfor i in range(100000):\n    x = {"a": [x]}\n    y = {"a": [y]}\n'


@pytest.mark.parametrize(
    "tail",
    ["return x", "return x == y", "return len(str(x))", "return len(unique([x, x]))", "print(x)"],
)
def test_deep_nesting_is_an_error_not_a_crash_of_the_host(tmp_path: Path, tail: str) -> None:
    # Lists and records only (no tuples, iterators or objects): every C path that walks them
    # (JSON, comparison, repr, deallocation) is depth-guarded, so the host gets RecursionError.
    ran = run(DEEP + tail, tmp_path, wall_seconds=60.0, cpu_seconds=60.0)
    assert ran.result.status is ExecStatus.ERROR
    assert ran.result.message.startswith("RecursionError"), ran.result.message


def test_every_single_value_is_small_so_memory_growth_is_stopped_between_them(
    tmp_path: Path,
) -> None:
    # Half a megabyte per string, a thousand of them: the watchdog sees the host grow past the
    # session's memory_bytes and the next counted operation (each lambda call) stops the run.
    source = (
        's = "x"\nfor i in range(19):\n    s = s + s\n'
        "xs = map(range(1000), lambda i: s + str(i))\nreturn len(xs)"
    )
    spec = SessionSpec(
        blobs=BlobStore(tmp_path / "blobs"),
        tools=granted(),
        workdir=tmp_path / "work",
        limits=Limits(memory_bytes=64 * 2**20),
    )
    session = DslBackend().open(spec)
    try:
        result = session.run(ExecRequest(action_id="m", code=source, limits=Limits()))
    finally:
        session.close()
    assert result.status is ExecStatus.LIMIT_EXCEEDED
    assert "memory limit" in result.message


def test_one_value_cannot_be_made_huge_in_one_step(tmp_path: Path) -> None:
    # The single C operation restricted mode cannot interrupt ("x" * 10**10) has no DSL form:
    # `*` is numbers only, and `+`, join and replace check the size before they build.
    assert run('return "x" * 1000', tmp_path).result.status is ExecStatus.ERROR
    ran = run('s = "x"\nfor i in range(25):\n    s = s + s\nreturn len(s)', tmp_path)
    assert ran.result.status is ExecStatus.ERROR and "1000000 characters" in ran.result.message


# Every node shape the compiler can emit; anything else in a compiled module is a compiler bug.
EMITTED = {
    "Add", "And", "Assign", "BinOp", "BoolOp", "Call", "Compare", "Constant", "Dict", "Div", "Eq",
    "Expr", "FloorDiv", "For", "FormattedValue", "Gt", "GtE", "If", "IfExp", "In", "JoinedStr",
    "Lambda", "List", "Load", "Lt", "LtE", "Mod", "Module", "Mult", "Name", "Not", "NotEq",
    "NotIn", "Or", "Pass", "Store", "Sub", "USub", "UnaryOp", "arg", "arguments", "keyword",
}  # fmt: skip


def _assert_only_emitted_shapes(source: str) -> None:
    result = front(source)
    if not result.accepted or result.checked is None:
        return
    module = compile_program(result.checked)
    kinds = {type(node).__name__ for node in ast.walk(module)}
    assert kinds <= EMITTED, kinds - EMITTED
    tools = {s.tool for s in result.checked.sites}
    for node in ast.walk(module):
        if isinstance(node, ast.Call):  # calls name a helper or a checked tool, nothing else
            assert isinstance(node.func, ast.Name)
            assert node.func.id.startswith("dsl_") or node.func.id in tools, node.func.id


@pytest.mark.parametrize("program", sorted(EXAMPLES.glob("*.dsl")), ids=lambda p: p.stem)
def test_compiled_examples_hold_only_the_shapes_the_compiler_emits(program: Path) -> None:
    _assert_only_emitted_shapes(program.read_text(encoding="utf-8"))


@settings(max_examples=150, deadline=None)
@given(programs())
def test_compiled_generated_programs_hold_only_the_shapes_the_compiler_emits(source: str) -> None:
    _assert_only_emitted_shapes(source)


def _method_call(value: ast.expr) -> ast.expr:
    return ast.Call(func=ast.Attribute(value=value, attr="x", ctx=ast.Load()), args=[], keywords=[])


# A compiler bug that emitted any other shape is refused before compile(): the session runs the
# code with no builtins and no RestrictedPython pass, so this check is the fourth wall.
@pytest.mark.parametrize(
    ("swap", "says"),
    [
        (lambda v: ast.Attribute(value=v, attr="__class__", ctx=ast.Load()), "Attribute node"),
        (lambda v: ast.Subscript(value=v, slice=ast.Constant(0), ctx=ast.Load()), "Subscript"),
        (lambda v: ast.Name(id="__builtins__", ctx=ast.Load()), "'__builtins__'"),
        (lambda v: ast.Name(id="dsl_give", ctx=ast.Store()), "'dsl_give'"),
        (_method_call, "call of a non-name"),
        (lambda v: ast.Constant(value=b"bytes"), "non-JSON constant"),
        (lambda v: ast.List(elts=[v, object()], ctx=ast.Load()), "object node"),
        (lambda v: ast.UnaryOp(op=ast.Not(), operand=ast.Starred(v, ast.Load())), "Starred"),
    ],
    ids=[
        "attribute",
        "subscript",
        "private-name",
        "helper-rebound",
        "method-call",
        "bytes",
        "foreign",
        "starred",
    ],
)
def test_a_node_outside_the_compilers_shapes_is_refused_before_it_compiles(
    monkeypatch: pytest.MonkeyPatch, swap: object, says: str
) -> None:
    from safeexec.dsl import compiler

    plain = compiler._Compiler.expr

    def buggy(self: object, e: object) -> ast.expr:
        made = plain(self, e)  # type: ignore[arg-type]
        return swap(made) if isinstance(made, ast.Name) else made  # type: ignore[operator,no-any-return]

    monkeypatch.setattr(compiler._Compiler, "expr", buggy)
    result = front("x = 1\nreturn x")
    assert result.checked is not None
    with pytest.raises(CompiledShapeError, match=says):
        compile_code(result.checked)


def test_a_changed_grant_is_checked_again_not_served_from_the_cache(tmp_path: Path) -> None:
    source = 'a = get_quote(ticker="ACME")\nb = get_quote(ticker="INIT")\nreturn 1'
    forget_checks()
    wide = check_source(source, signatures_of(granted({"get_quote": 5})))
    assert wide.accepted
    assert check_source(source, signatures_of(granted({"get_quote": 5}))).code() is wide.code()
    narrow = check_source(source, signatures_of(granted({"get_quote": 1})))
    assert not narrow.accepted and "SX704" in [f.rule for f in narrow.findings]
    assert run(source, tmp_path, caps=granted({"get_quote": 2})).result.status is ExecStatus.OK
    refused = run(source, tmp_path / "again", caps=granted({"get_quote": 1}))
    assert refused.result.status is ExecStatus.ERROR and "SX704" in refused.result.message
    assert refused.caps.statistics().calls == 0


def test_a_cached_check_plans_again_for_other_approval_effects() -> None:
    source = 'code = reserve(sku="A1")\nreturn code'
    tools = signatures_of(granted())
    forget_checks()
    free = check_source(source, tools)
    asked = check_source(source, tools, approval_effects=["money"])
    assert free.plan is not None and asked.plan is not None
    assert free.plan.approval_effects == () and asked.plan.approval_effects == ("money",)
    assert "SX710" in [f.rule for f in asked.findings]
    assert "SX710" not in [f.rule for f in free.findings]
    assert check_source(source, tools, approval_effects=("money",)).plan is asked.plan


def test_signatures_are_shared_between_runs_and_follow_the_calls_left() -> None:
    caps = granted({"get_quote": 2})
    before = {s.name: s for s in signatures_of(caps)}
    assert before["get_quote"].max_calls == 2
    again = {s.name: s for s in signatures_of(caps)}
    assert all(again[name] is signature for name, signature in before.items())
    reply = caps.invoke("get_quote", {"args": [], "kwargs": {"ticker": "ACME"}})
    assert reply.ok, reply
    after = {s.name: s for s in signatures_of(caps)}
    assert after["get_quote"].max_calls == 1
    assert after["get_fx_rate"] is before["get_fx_rate"]
