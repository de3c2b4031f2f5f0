"""The claims dsl/SPEC.md's "Where a DSL program runs" rests on, for the evaluator in the host
process (``dsl-inprocess``; ``dsl`` runs the same code in the confined worker): what the
restricted in-process mode cannot stop, the DSL either cannot express or stops.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from dsl_support import EXAMPLES, front, granted, run
from hypothesis import given, settings
from test_dsl_properties import programs

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.dsl import InProcessDslBackend
from safeexec.dsl.compiler import CompiledShapeError, compile_code, compile_program
from safeexec.dsl.front import check_source, forget_checks
from safeexec.dsl.signatures import signatures_of
from safeexec.model.values import ExecRequest, ExecStatus, Limits

DEEP = 'x = {"a": []}\ny = x\nfor i in range(100000):\n    x = {"a": [x]}\n    y = {"a": [y]}\n'


@pytest.mark.parametrize(
    "tail",
    ["return x", "return x == y", "return len(str(x))", "return len(unique([x, x]))", "print(x)"],
)
def test_deep_nesting_is_an_error_not_a_crash_of_the_host(tmp_path: Path, tail: str) -> None:
    # Lists and records only (no tuples, iterators or objects): every C path that walks them
    # (JSON, comparison, repr, deallocation) is depth-guarded, so the host gets RecursionError.
    ran = run(
        DEEP + tail, tmp_path, backend=InProcessDslBackend(), wall_seconds=60.0, cpu_seconds=60.0
    )
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
    session = InProcessDslBackend().open(spec)
    try:
        result = session.run(ExecRequest(action_id="m", code=source, limits=Limits()))
    finally:
        session.close()
    assert result.status is ExecStatus.LIMIT_EXCEEDED
    assert "memory limit" in result.message


def test_one_value_cannot_be_made_huge_in_one_step(tmp_path: Path) -> None:
    # The single C operation restricted mode cannot interrupt ("x" * 10**10) has no DSL form:
    # `*` is numbers only, and every value is charged against its cap before it is built.
    backend = InProcessDslBackend()
    assert run('return "x" * 1000', tmp_path, backend=backend).result.status is ExecStatus.ERROR
    ran = run(
        's = "x"\nfor i in range(25):\n    s = s + s\nreturn len(s)', tmp_path, backend=backend
    )
    limit = ExecStatus.LIMIT_EXCEEDED
    assert ran.result.status is limit and "1000000 characters" in ran.result.message


# Every node shape the compiler can emit; anything else in a compiled module is a compiler bug.
# No shape makes a value by itself (lists, records, f-strings and arithmetic are helper calls).
EMITTED = {
    "And", "Assign", "BoolOp", "Call", "Compare", "Constant", "Eq", "Expr", "For", "Gt", "GtE",
    "If", "IfExp", "In", "Lambda", "Load", "Lt", "LtE", "Module", "Name", "Not", "NotEq", "NotIn",
    "Or", "Pass", "Store", "USub", "UnaryOp", "arg", "arguments", "keyword",
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
# code with no builtins and no RestrictedPython pass, so this check is the fourth wall. A node
# not made by the compiler's constructors is refused where it would become a child, whatever it
# holds (a private name, a bytes constant, a starred child two levels down).
@pytest.mark.parametrize(
    ("swap", "says"),
    [
        (lambda v: ast.Attribute(value=v, attr="__class__", ctx=ast.Load()), "Attribute node"),
        (lambda v: ast.Subscript(value=v, slice=ast.Constant(0), ctx=ast.Load()), "Subscript"),
        (lambda v: ast.Name(id="__builtins__", ctx=ast.Load()), "Name node"),
        (lambda v: ast.Name(id="dsl_give", ctx=ast.Store()), "Name node"),
        (_method_call, "Call node"),
        (lambda v: ast.Constant(value=b"bytes"), "Constant node"),
        (lambda v: ast.List(elts=[v, object()], ctx=ast.Load()), "List node"),
        (lambda v: ast.UnaryOp(op=ast.Not(), operand=ast.Starred(v, ast.Load())), "UnaryOp"),
        (lambda v: object(), "object node"),
        (lambda v: [v], "list node"),
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
        "object",
        "unhashable",
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


def test_a_statement_outside_the_compilers_shapes_is_refused_before_it_compiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from safeexec.dsl import compiler

    def buggy(self: object, s: object) -> ast.stmt:
        return ast.Import(names=[ast.alias(name="os")], lineno=1, col_offset=0)

    monkeypatch.setattr(compiler._Compiler, "stmt", buggy)
    result = front("x = 1\nreturn x")
    assert result.checked is not None
    with pytest.raises(CompiledShapeError, match="Import node"):
        compile_code(result.checked)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda c: c._load("__builtins__"), "'__builtins__'"),
        (lambda c: c._store("dsl_give"), "'dsl_give'"),
        (lambda c: c._store("_x"), "'_x'"),
        (lambda c: c._param("dsl_loop"), "parameter 'dsl_loop'"),
        (lambda c: c._constant(b"bytes"), "non-JSON constant"),
        (lambda c: c._constant(1j), "non-JSON constant"),
    ],
    ids=["private-name", "helper-rebound", "private-store", "helper-parameter", "bytes", "complex"],
)
def test_what_a_program_chooses_is_checked_as_its_node_is_made(make: object, says: str) -> None:
    from safeexec.dsl import compiler

    result = front("x = 1\nreturn x")
    assert result.checked is not None
    with pytest.raises(CompiledShapeError, match=says):
        make(compiler._Compiler(result.checked))  # type: ignore[operator]


def test_the_wall_fails_when_its_record_of_made_nodes_is_not_consulted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The mechanism can fail: a constructor that takes any child lets a foreign node through to
    # compile(), which the test above would then see.
    from safeexec.dsl import compiler

    monkeypatch.setattr(compiler._Compiler, "_kid", lambda self, node: node)
    monkeypatch.setattr(compiler._Compiler, "_kids", lambda self, nodes: nodes)
    plain = compiler._Compiler.expr

    def buggy(self: object, e: object) -> ast.expr:
        made = plain(self, e)  # type: ignore[arg-type]
        if isinstance(made, ast.Name):
            attribute = ast.Attribute(value=made, attr="__class__", ctx=ast.Load())
            return ast.copy_location(attribute, made)
        return made

    monkeypatch.setattr(compiler._Compiler, "expr", buggy)
    result = front("x = 1\nreturn x")
    assert result.checked is not None
    module = compile_program(result.checked)  # no CompiledShapeError: the wall is off
    assert any(isinstance(node, ast.Attribute) for node in ast.walk(module))


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


def test_only_the_compilers_constructors_make_nodes_and_only_the_emitted_shapes() -> None:
    # The static half of the wall: every node class the compiler's source instantiates is one of
    # the emitted shapes, and outside the constructors (methods named with a leading `_`) it
    # instantiates none but the module itself and the shared operators and contexts.
    from safeexec.dsl import compiler

    tree = ast.parse(Path(compiler.__file__).read_text(encoding="utf-8"))
    scopes: list[tuple[str, list[ast.stmt]]] = [
        ("<module>", [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))])
    ]
    scopes += [(f.name, f.body) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
    made: dict[str, set[str]] = {}
    for where, body in scopes:
        for node in (x for s in body for x in ast.walk(s)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ast"
                and isinstance(getattr(ast, node.func.attr, None), type)
            ):
                made.setdefault(where, set()).add(node.func.attr)
    everywhere = set().union(*made.values())
    assert everywhere <= EMITTED, everywhere - EMITTED
    outside = {where: kinds for where, kinds in made.items() if not where.startswith("_")}
    operators = {"Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Eq", "NotEq", "Lt", "LtE"}
    operators |= {"Gt", "GtE", "In", "NotIn", "And", "Or", "Not", "USub", "Load", "Store"}
    assert outside.pop("compile_program") == {"Module"}
    assert set().union(*outside.values()) <= operators, outside
