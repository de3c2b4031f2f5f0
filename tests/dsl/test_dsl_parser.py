"""The DSL parser: the grammar ships in the package; Python is refused at its first non-DSL
construct with line, column, caret and a suggestion; spans point into the program."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from safeexec.dsl import nodes as n
from safeexec.dsl.parser import MAX_DEPTH, MAX_SOURCE_CHARS, parse_program
from safeexec.model.values import Finding

ROOT = Path(__file__).resolve().parents[2]


def test_the_grammar_ships_inside_the_package() -> None:
    assert resources.files("safeexec.dsl").joinpath("grammar.lark").is_file()
    assert '"safeexec.dsl": ["grammar.lark"]' in (ROOT / "setup.py").read_text()


def test_a_pipeline_parses_into_a_typed_tree_with_spans() -> None:
    program = parse_program(
        'items = search(query="usb", limit=5)\n'
        "for p in take(items, 2):\n"
        '    print(f"{p.name}: {p.price:.2f}")\n'
        "return len(items) if True else 0\n"
    )
    assert isinstance(program, n.Program)
    assign, loop, ret = program.body
    assert isinstance(assign, n.Assign) and isinstance(assign.value, n.Call)
    assert assign.value.func == "search"
    assert [k.name for k in assign.value.keywords] == ["query", "limit"]
    assert assign.value.func_span.start_column == 9 and assign.value.func_span.end_column == 14
    assert isinstance(loop, n.For) and loop.var == "p"
    (show,) = loop.body
    assert isinstance(show, n.ExprStmt) and isinstance(show.value, n.Call)
    fstring = show.value.args[0]
    assert isinstance(fstring, n.FString)
    name_part, colon, price_part = fstring.parts
    assert colon == ": "
    assert isinstance(name_part, tuple) and isinstance(name_part[0], n.Field)
    # The f-string's inner expression keeps its own place in the program.
    assert (name_part[0].span.start_line, name_part[0].span.start_column) == (3, 14)
    assert isinstance(price_part, tuple) and price_part[1] == ".2f"
    assert isinstance(ret, n.Return) and isinstance(ret.value, n.Cond)


@pytest.mark.parametrize(
    ("source", "line", "column", "hint"),
    [
        ("import os\nos.system('id')", 1, 1, "no imports"),
        ("x = 1\nfrom os import path", 2, 1, "no imports"),
        ("def f():\n    return 1", 1, 1, "no function definitions"),
        ("class A:\n    pass", 1, 1, "no classes"),
        ("x = 0\nwhile True:\n    x = 1", 2, 1, "no while"),
        ("x = ().__class__.__bases__[0]", 1, 6, "expected"),
        ("__import__('os').system('id')", 1, 1, "names starting with `_`"),
        ("x = s.lower()", 1, 12, "no methods"),
        ("y = open('/etc/passwd').read()", 1, 29, "no methods"),
        ("x = 2 ** 64", 1, 7, "no power operator"),
        ("x = [i for i in range(3)]", 1, 8, "map("),
        ("f = lambda x: f(x)", 1, 5, "only as an argument"),
        ("try:\n    x = 1\nexcept Exception:\n    x = 2", 1, 1, "no try"),
        ("with open('f') as fh:\n    x = 1", 1, 1, "no with"),
        ("x = 1; y = 2", 1, 6, "one statement per line"),
        ("for x in xs:\n    break", 2, 5, "no break"),
        ("x = a is None", 1, 7, "=="),
        ("x = (1, 2)", 1, 7, "expected one of"),
        ("x = (1 +\n", 1, 8, "missing"),
    ],
)
def test_python_is_refused_at_its_first_non_dsl_construct(
    source: str, line: int, column: int, hint: str
) -> None:
    finding = parse_program(source)
    assert isinstance(finding, Finding), finding
    assert finding.rule == "SX700" and finding.name == "dsl-syntax-error"
    assert finding.span is not None
    assert (finding.span.start_line, finding.span.start_column) == (line, column)
    assert hint in finding.message
    # The evidence is the offending line with a caret under the construct.
    shown, caret = finding.evidence.split("\n")
    assert shown == source.replace("\r\n", "\n").split("\n")[line - 1]
    assert caret == " " * (column - 1) + "^"


def test_keywords_inside_strings_and_comments_are_not_constructs() -> None:
    program = parse_program('note = "import this; while you can"  # def class\nreturn note')
    assert isinstance(program, n.Program)


def test_bad_f_strings_are_findings_not_crashes() -> None:
    for source in ('x = f"{a"', 'x = f"{}"', 'x = f"}"', 'x = f"{a.__b}"'):
        finding = parse_program(source)
        assert isinstance(finding, Finding) and finding.rule == "SX700", source


def test_input_too_large_or_too_deep_is_refused_without_parsing() -> None:
    huge = parse_program("x = 1\n" * (MAX_SOURCE_CHARS // 6 + 1))
    assert isinstance(huge, Finding) and "characters" in huge.message
    deep = parse_program("x = " + "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))
    assert isinstance(deep, Finding) and "deeper" in deep.message


def test_a_long_flat_chain_parses_without_recursion_errors() -> None:
    program = parse_program("x = " + " + ".join(["1"] * 5000) + "\nreturn x")
    assert isinstance(program, n.Program)


def test_indentation_mistakes_say_what_to_indent() -> None:
    missing = parse_program("for x in xs:\nprint(x)")
    assert isinstance(missing, Finding) and "indent the body" in missing.message
    extra = parse_program("x = 1\n    y = 2")
    assert isinstance(extra, Finding) and "indent only the body" in extra.message
    uneven = parse_program("if x:\n    y = 1\n  z = 2")
    assert isinstance(uneven, Finding) and "inconsistent indentation" in uneven.message
