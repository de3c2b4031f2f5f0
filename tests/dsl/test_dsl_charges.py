"""Every DSL construct that makes a value is charged against the caps in one place
(``DslRuntime.charge``) before the value is made.

The tables below classify every construct the grammar has, every node class, every op and every
helper the compiled code can call: one that makes a string, list or record (or number text) has
an oversized case that must stop in ``charge`` itself; one that makes none says why. A construct
added without a row fails the enumeration tests; a maker whose helper builds first (or checks
elsewhere) fails the frame check; a program growing through each maker stops at its cap with a
limit status in the confined worker, or is refused with an SX7xx finding before it runs.
"""

from __future__ import annotations

import ast
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

import pytest
from dsl_support import granted, worker_backend

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import BackendSession, SessionSpec
from safeexec.backends.capping import CappedText
from safeexec.dsl import nodes as n
from safeexec.dsl.compiler import compile_program
from safeexec.dsl.front import check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.ops import OPS
from safeexec.dsl.signatures import signatures_of
from safeexec.model.values import ExecRequest, ExecStatus, Limits
from safeexec.sandbox.dsl_executor import DslBounds, new_runtime, run_program
from safeexec.sandbox.dsl_runtime import HELPERS, DslLimitError, DslRuntime

GRAMMAR = Path(__file__).resolve().parents[2] / "safeexec" / "dsl" / "grammar.lark"
CAPS = DslLimits(max_items=50, max_text_chars=1000)

# -- the grammar's constructs and node classes ---------------------------------------------------

# Grammar rules and aliases that make a value, with the helper the compiler emits for them.
GRAMMAR_MAKERS = {
    "binop": "dsl_add / dsl_mul / dsl_arith",
    "aug_assign": "dsl_add / dsl_mul / dsl_arith (desugared to binop)",
    "fstr_lit": "dsl_format",
    "list_lit": "dsl_list",
    "record_lit": "dsl_record",
    "call": "the op's dsl_<op> (see OP_MAKERS) or a metered tool (arguments charged as text)",
}
# Grammar rules and aliases that make no value: why.
GRAMMAR_READS = {
    **dict.fromkeys(
        (
            "start",
            "stmt",
            "simple_stmt",
            "suite",
            "expr_stmt",
            "for_stmt",
            "if_stmt",
            "elif_clause",
            "else_clause",
            "return_stmt",
            "assign",
        ),
        "a statement: binds or runs what its expressions made",
    ),
    **dict.fromkeys(
        (
            "expr",
            "cond_expr",
            "or_expr",
            "and_expr",
            "not_expr",
            "comparison",
            "sum",
            "term",
            "factor",
            "postfix",
            "atom",
            "argument",
            "arguments",
            "entry",
            "keyword",
            "lambda_expr",
        ),
        "a precedence level or a part of a call or literal (its node is charged)",
    ),
    **dict.fromkeys(("cond", "or_op", "and_op"), "selects one operand, already made"),
    **dict.fromkeys(("not_op", "compare", "in_op", "not_in_op"), "a bool"),
    "neg": "a number no wider than its operand (ints are bit-capped when made)",
    "field": "reads an item already made",
    "index": "reads an item already made, or one character",
    "var": "reads a binding",
    **dict.fromkeys(
        ("int_lit", "float_lit", "str_lit", "true_lit", "false_lit", "none_lit"),
        "a constant of the program's own text",
    ),
}
NODE_MAKERS = {
    n.BinOp: "binop",
    n.FString: "fstr_lit",
    n.ListExpr: "list_lit",
    n.RecordExpr: "record_lit",
    n.Call: "call",
}
NODE_READS = {n.Literal, n.Name, n.Field, n.Index, n.Compare, n.BoolOp, n.Not, n.Neg, n.Cond}


def _grammar_names() -> set[str]:
    text = GRAMMAR.read_text(encoding="utf-8")
    rules = set(re.findall(r"^\??([a-z_]+):", text, flags=re.MULTILINE))
    aliases = set(re.findall(r"->\s*([a-z_]+)", text))
    return rules | aliases


def test_every_grammar_construct_is_classified() -> None:
    names = _grammar_names()
    assert names, "the grammar's rules were not found"
    assert not set(GRAMMAR_MAKERS) & set(GRAMMAR_READS)
    assert names == set(GRAMMAR_MAKERS) | set(GRAMMAR_READS), names ^ (
        set(GRAMMAR_MAKERS) | set(GRAMMAR_READS)
    )


def test_every_expression_node_class_is_classified() -> None:
    expressions = set(typing.get_args(n.Expr))
    assert expressions == set(NODE_MAKERS) | NODE_READS
    assert not set(NODE_MAKERS) & NODE_READS


# -- every op and helper the compiled code can call ----------------------------------------------


def _dag(depth: int) -> list[object]:
    """A list shown with 2**depth leaves, made of depth small lists (shared)."""
    value: list[object] = [1]
    for _ in range(depth):
        value = [value, value]
    return value


# Oversized calls under the caps max_items=5, max_text_chars=20: (positional, keyword) arguments.
OP_MAKERS: dict[str, tuple[tuple[object, ...], dict[str, object]]] = {
    "map": ((list(range(10)), lambda x: x), {}),
    "filter": ((list(range(10)), lambda x: True), {}),
    "where": ((list(range(10)), lambda x: True), {}),
    "sort": ((list(range(10)),), {}),
    "sort_by": ((list(range(10)), lambda x: x), {}),
    "unique": ((list(range(10)),), {}),
    "reverse": ((list(range(10)),), {}),
    "take": ((list(range(10)), 8), {}),
    "range": ((10,), {"bound": 5}),
    "group": ((list(range(10)), lambda x: x), {}),
    "join": ((["abcdef"] * 5, ""), {}),
    "split": (("a," * 10, ","), {}),
    "keys": (({str(i): i for i in range(10)},), {}),
    "values": (({str(i): i for i in range(10)},), {}),
    "str": ((_dag(40),), {}),
    "lower": (("É" * 10,), {}),
    "upper": (("é" * 10,), {}),
    "strip": ((" " + "x" * 30,), {}),
    "replace": (("aaaa", "a", "xxxxxxxx"), {}),
    "print": ((_dag(40),), {}),
}
OP_READS = {
    **dict.fromkeys(
        (
            "len",
            "count",
            "sum",
            "avg",
            "min",
            "max",
            "min_by",
            "max_by",
            "any",
            "all",
            "int",
            "float",
            "round",
            "abs",
            "startswith",
            "endswith",
            "ord",
        ),
        "a bool or a number (ints are bit-capped)",
    ),
    **dict.fromkeys(("first", "last", "get"), "an item already made"),
    "chr": "one character",
}
HELPER_MAKERS: dict[str, tuple[object, ...]] = {
    "list": tuple(range(10)),
    "record": tuple(x for i in range(10) for x in (str(i), i)),
    "format": ("", _dag(40), "", ""),
    "add": ("x" * 15, "y" * 15),
}
HELPER_READS = {
    "loop": "iterates a list already made (counted against the plan's iterations)",
    "field": "reads an item already made",
    "index": "reads an item already made, or one character",
    "mul": "numbers only (no repetition); ints bit-capped",
    "arith": "numbers only (`%` on a string is refused); ints bit-capped",
    "give": "holds the result (shown through the charged shown_result)",
}


def test_every_op_and_helper_is_classified() -> None:
    assert set(OP_MAKERS) | set(OP_READS) == set(OPS)
    assert not set(OP_MAKERS) & set(OP_READS)
    assert set(HELPER_MAKERS) | set(HELPER_READS) == set(HELPERS)
    assert not set(HELPER_MAKERS) & set(HELPER_READS)
    # The compiled code can name nothing else (dsl_ names are exactly these).
    exposed = {name for name in _runtime().namespace({}) if name.startswith("dsl_")}
    assert exposed == {f"dsl_{op}" for op in OPS} | {f"dsl_{h}" for h in HELPERS}


def _runtime(sink: CappedText | None = None) -> DslRuntime:
    return DslRuntime(
        max_iterations=10_000, call_bounds={"echo": 5}, max_items=5, max_text_chars=20,
        sink=sink if sink is not None else CappedText(10_000),
    )  # fmt: skip


def _stopped_in_charge(call: Callable[[], object]) -> None:
    """``call`` raises DslLimitError from ``DslRuntime.charge`` (not after making the value)."""
    with pytest.raises(DslLimitError) as raised:
        call()
    tb: TracebackType | None = raised.value.__traceback__
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    assert last is not None and last.tb_frame.f_code is DslRuntime.charge.__code__, raised.value


@pytest.mark.parametrize("op", sorted(OP_MAKERS))
def test_an_op_that_makes_a_value_is_stopped_in_the_charge(op: str) -> None:
    args, kwargs = OP_MAKERS[op]
    sink = CappedText(10_000)
    method = getattr(_runtime(sink), f"op_{op}")
    _stopped_in_charge(lambda: method(*args, **kwargs))
    assert sink.capture.total == 0  # print showed nothing


@pytest.mark.parametrize("helper", sorted(HELPER_MAKERS))
def test_a_helper_that_makes_a_value_is_stopped_in_the_charge(helper: str) -> None:
    method = getattr(_runtime(), f"h_{helper}")
    _stopped_in_charge(lambda: method(*HELPER_MAKERS[helper]))


def test_lists_joined_by_plus_are_charged_as_items() -> None:
    _stopped_in_charge(lambda: _runtime().h_add([0] * 3, [0] * 3))


def test_a_shown_result_tool_arguments_and_tool_results_are_charged() -> None:
    runtime = _runtime()
    runtime.h_give(_dag(40))
    _stopped_in_charge(runtime.shown_result)
    calls: list[object] = []

    def tool(**kwargs: object) -> str:
        calls.append(kwargs)
        return "x" * 30

    echo = runtime.metered_tool("echo", tool)
    _stopped_in_charge(lambda: echo(text=_dag(40)))
    assert not calls  # the arguments never reached the tool
    _stopped_in_charge(lambda: echo(text="short"))  # its 30-character result is over the cap


# Number formatting: the spec's width and precision are charged before ``format`` runs.
@pytest.mark.parametrize(
    "parts",
    [
        ("", 1.5, ".999999999f", ""),
        ("", 7, "0999d", ""),
        ("", 2**4000, ",", ""),
        ("", "ab", ">999", ""),
    ],
    ids=["precision", "width", "grouping", "padded-string"],
)
def test_a_formatted_number_is_charged_from_its_spec(parts: tuple[object, ...]) -> None:
    _stopped_in_charge(lambda: _runtime().h_format(*parts))


# -- programs that grow through each maker --------------------------------------------------------

# One program per value-producing construct, each growing past max_items=50 or
# max_text_chars=1000 (CAPS).
GROWING = {
    "fstring": 's = "ab"\nfor i in range(20):\n    s = f"{s}{s}"\nreturn len(s)',
    "fstring-number-precision": 'return f"{1.5:.5000f}"',
    "fstring-number-width": 'return f"{1:999d}{2:999d}"',
    "fstring-shown-collection": 'x = [1]\nfor i in range(40):\n    x = [x, x]\nreturn f"{x}"',
    "concatenation": 's = "ab"\nfor i in range(20):\n    s = s + s\nreturn len(s)',
    "augmented-concatenation": 's = "ab"\nfor i in range(20):\n    s += s\nreturn len(s)',
    "list-concatenation": "xs = [1]\nfor i in range(20):\n    xs += xs\nreturn len(xs)",
    "join": 'return join(map(range(40), lambda i: "abcdefghijklmnopqrstuvwxyz"), "")',
    "replace": (
        's = "aaaaaaaaaa"\nfor i in range(3):\n    s = replace(s, "a", "aaaaaaaaaa")\nreturn s'
    ),
    "replace-empty": 'return replace("abcdefghij", "", "' + "0123456789" * 10 + '")',
    "list-literal": "return [" + ", ".join(str(i) for i in range(51)) + "]",
    "record-literal": "return {" + ", ".join(f'"k{i}": {i}' for i in range(51)) + "}",
    "range": "n = 30 + 30\nreturn range(n)",
    "map-over-a-long-range": "return map(range(100), lambda i: i)",
    "group": "return group(range(100), lambda i: i)",
    "split": 's = "a,"\nfor i in range(6):\n    s = s + s\nreturn split(s, ",")',
    "str": "x = [1]\nfor i in range(40):\n    x = [x, x]\nreturn str(x)",
    "upper": 's = "ÿ"\nfor i in range(9):\n    s = s + s\nreturn upper(s)',
    "print": "x = [1]\nfor i in range(40):\n    x = [x, x]\nprint(x)\nreturn 1",
    "returned-value": "x = [1]\nfor i in range(40):\n    x = [x, x]\nreturn x",
    # 990 characters, under the cap; as the call's JSON arguments, over it.
    "tool-arguments": 's = "abcdefghi"\nfor i in range(109):\n    s += "abcdefghi"\n'
    "return search_products(query=s)",
}
# Constructs the checker refuses before anything runs (an SX7xx finding).
REFUSED = {
    "repetition": ('return "ab" * 1000', "SX702"),
    "list-repetition": ("return [1] * 1000", "SX702"),
    "literal-range-past-the-iterations": ("return range(100000000)", "SX703"),
    "number-format-width": ('return f"{1:99999d}"', "SX702"),
}


@pytest.fixture(scope="module")
def worker_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackendSession]:
    tmp = tmp_path_factory.mktemp("charges")
    (tmp / "work").mkdir()
    spec = SessionSpec(blobs=BlobStore(tmp / "blobs"), tools=granted(), workdir=tmp / "work")
    session = worker_backend(CAPS).open(spec)
    yield session
    session.close()


def test_every_maker_has_a_growing_program() -> None:
    covered = {
        "binop": {"concatenation", "list-concatenation"},
        "aug_assign": {"augmented-concatenation"},
        "fstr_lit": {"fstring", "fstring-number-precision", "fstring-shown-collection"},
        "list_lit": {"list-literal"},
        "record_lit": {"record-literal"},
        "call": {"join", "replace", "range", "str", "upper", "split", "tool-arguments"},
    }
    assert set(covered) == set(GRAMMAR_MAKERS)
    assert set().union(*covered.values()) <= set(GROWING)


@pytest.mark.parametrize("name", sorted(GROWING))
def test_a_program_growing_through_each_maker_stops_at_its_cap_in_the_worker(
    worker_session: BackendSession, name: str
) -> None:
    request = ExecRequest(action_id=name, code=GROWING[name], limits=Limits())
    result = worker_session.run(request)
    assert result.status is ExecStatus.LIMIT_EXCEEDED, result.message
    assert result.message.startswith("DslLimitError: "), result.message


@pytest.mark.parametrize("name", sorted(GROWING))
def test_a_growing_program_stops_in_the_charge(name: str) -> None:
    # The same programs in this process, to see where they stop: in ``charge``, before the value.
    front = check_source(GROWING[name], signatures_of(granted()), limits=CAPS)
    assert front.accepted and front.plan is not None, front.findings
    plan = front.plan
    bounds = DslBounds(
        iterations=plan.iterations,
        calls={t.name: t.max_calls for t in plan.tools},
        max_items=CAPS.max_items,
        max_text_chars=CAPS.max_text_chars,
    )
    runtime = new_runtime(bounds, sink=CappedText(100_000))
    tools = {"search_products": lambda **kwargs: []}

    def program() -> object:
        run_program(front.code(), filename="<t>", runtime=runtime, tools=tools)
        return runtime.shown_result()

    _stopped_in_charge(program)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_construct_with_no_bounded_form_is_refused_before_it_runs(name: str) -> None:
    source, rule = REFUSED[name]
    front = check_source(source, signatures_of(granted()), limits=CAPS)
    assert not front.accepted
    assert rule in {f.rule for f in front.findings}


def test_the_compiled_module_makes_no_value_by_itself() -> None:
    # Lists, records, f-strings and arithmetic are all helper calls: no node of the module can
    # build a string, list or record without passing through the charge.
    source = (
        'xs = [1, 2]\nr = {"a": xs}\ns = f"{r} {1.5:.2f}"\nt = s + "x"\n'
        "u = 3 - 1\nv = 7 % 2\nw = 1.5 * 2.0\nx = 6 // 4\ny = 1 / 2\nreturn [t, u, v, w, x, y]"
    )
    front = check_source(source, (), limits=CAPS)
    assert front.accepted and front.checked is not None
    module = compile_program(front.checked)
    making = (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.JoinedStr, ast.FormattedValue, ast.BinOp)
    assert not [type(node).__name__ for node in ast.walk(module) if isinstance(node, making)]
    called = {
        node.func.id
        for node in ast.walk(module)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert {"dsl_list", "dsl_record", "dsl_format", "dsl_add", "dsl_mul", "dsl_arith"} <= called
