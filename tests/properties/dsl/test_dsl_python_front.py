"""Both front ends accept exactly the same programs and build the same trees and findings: the
CPython converter (``python_front``) either builds lark's tree or leaves the text to lark.

Programs are generated from the grammar's own rules (so every construct the grammar has is
reached), then mutated toward Python; Python programs come from hypothesmith. The reference is
always lark over ``grammar.lark``."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import hypothesmith
import pytest
from dsl_support import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark.grammar import NonTerminal, Rule, Symbol
from lark.lexer import PatternStr

from safeexec.dsl import nodes as n
from safeexec.dsl import parser
from safeexec.dsl.lark_parse import lark_parser
from safeexec.dsl.literals import terminal
from safeexec.dsl.python_front import program_from_python
from safeexec.model.values import Finding


def by_lark(source: str) -> n.Program | Finding:
    """What the reference makes of ``source`` (the same pre-checks as parse_program)."""
    text = source.replace("\r\n", "\n")
    return parser._by_lark(text, parser._first_reserved_word(text))


def by_python(source: str) -> n.Program | None:
    return program_from_python(source, parser.parse_expression)


# -- programs from the grammar ------------------------------------------------------------------

_POOLS = {
    "NAME": ["x", "xs", "p", "items", "price", "total", "take", "map", "len", "format", "index"],
    "INT": ["0", "1", "42"],
    "FLOAT": ["2.5", "1e3", "0.5", "3.0E-2"],
    "STRING": ['"a"', "'b c'", '"it\\\'s"', '"x\\ny"', '"a\\\\b"', '"# no comment"', '"é"'],
    "FSTRING": [
        'f"{x}"', 'f"{p.price:.2f} each"', "f'{len(xs)}!'", 'f"{{}}"', 'f"{a if b else 1}"',
    ],
}  # fmt: skip
_MAX_DEPTH = 7


@cache
def _grammar() -> tuple[dict[str, list[list[Symbol]]], dict[str, int]]:
    """The grammar's rules by name, and each rule's least derivation height."""
    rules: dict[str, list[list[Symbol]]] = {}
    compiled: list[Rule] = lark_parser().rules
    for rule in compiled:
        rules.setdefault(rule.origin.name, []).append(list(rule.expansion))
    height: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for name, expansions in rules.items():
            for expansion in expansions:
                kids = [0 if s.is_term else height.get(s.name) for s in expansion]
                if None not in kids:
                    h = 1 + max([k for k in kids if k is not None], default=0)
                    if h < height.get(name, 1 << 30):
                        height[name] = h
                        changed = True
    return rules, height


def _terminal_text(draw: st.DrawFn, name: str) -> str:
    if name in _POOLS:
        return draw(st.sampled_from(_POOLS[name]))
    pattern = lark_parser().get_terminal(name).pattern
    if isinstance(pattern, PatternStr):
        return pattern.value
    return draw(st.from_regex(pattern.to_regexp(), fullmatch=True))


@st.composite
def grammar_programs(draw: st.DrawFn) -> str:
    """A program derived from the grammar's rules, laid out as the indenter reads it."""
    rules, height = _grammar()
    out: list[str] = []
    level, at_line_start = 0, True

    def emit(symbol: Symbol, depth: int) -> None:
        nonlocal level, at_line_start
        if symbol.is_term:
            if symbol.name == "_NL":
                comment = draw(st.sampled_from(["", "", "", "  # note", "\n", "\n    # aside"]))
                out.append(comment + "\n")
                at_line_start = True
            elif symbol.name == "_INDENT":
                level += 1
            elif symbol.name == "_DEDENT":
                level -= 1
            else:
                text = _terminal_text(draw, symbol.name)
                out.append("    " * level + text if at_line_start else " " + text)
                at_line_start = False
            return
        expansions = rules[symbol.name]
        if depth >= _MAX_DEPTH:  # the shallowest ways out only
            least = height[symbol.name]
            expansions = [
                e
                for e in expansions
                if 1 + max((0 if s.is_term else height[s.name] for s in e), default=0) == least
            ]
        for child in draw(st.sampled_from(expansions)):
            emit(child, depth + 1)

    emit(NonTerminal("start"), 0)
    return "".join(out)


_PYTHONISMS = [
    "(", ")", ",", ";", "**", "_", "lambda ", ":", "\n", "    ", "\\\n", "\t", "'", '"', "f", "r",
    "0x", "_1", "...", "*", "@", " is ", "not ", "=", " if ", " else ", "[", "]", "{", "}", "#",
    ".", "1", "ｘ", "u", " for y in xs", ":=", "+", "~", "\r", "\f", "0", "e5", "elif", "else:",
    "\\d", "async ", ", *xs", "**k", "[1:2]",
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, programs: st.SearchStrategy[str]) -> str:
    """A program with a few edits toward Python (or toward nothing)."""
    text = draw(programs)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.integers(0, 2))
        if edit == 0:
            text = text[:at] + draw(st.sampled_from(_PYTHONISMS)) + text[at:]
        elif edit == 1:
            text = text[:at] + text[at + draw(st.integers(1, 4)) :]
        else:
            text = text[:at] + text[at : at + draw(st.integers(1, 6))] + text[at:]
    return text


def _examples() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.dsl"))]


# -- the properties ---------------------------------------------------------------------------


@pytest.mark.parametrize("program", sorted(EXAMPLES.glob("*.dsl")), ids=lambda p: p.stem)
def test_cpython_takes_every_example_and_builds_lark_s_tree(program: Path) -> None:
    source = program.read_text(encoding="utf-8")
    assert by_python(source) == by_lark(source)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammar_programs())
def test_on_programs_from_the_grammar_cpython_builds_lark_s_tree_or_leaves_it(text: str) -> None:
    reference = by_lark(text)
    assert isinstance(reference, n.Program), (text, reference)  # the generator makes DSL
    fast = by_python(text)
    assert fast is None or fast == reference
    assert parser.parse_program(text) == reference


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(grammar_programs(), min_size=30, max_size=30))
def test_cpython_takes_most_programs_from_the_grammar(texts: list[str]) -> None:
    # Guards the test above against testing nothing. What it leaves to lark is what Python
    # refuses: a positional argument after a keyword one, a keyword-named field (dsl/SPEC.md).
    taken = [t for t in texts if by_python(t) is not None]
    assert len(taken) >= len(texts) // 3, len(taken)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(st.one_of(grammar_programs(), st.sampled_from(_examples()))))
def test_on_mutated_programs_both_front_ends_agree(text: str) -> None:
    assert parser.parse_program(text) == by_lark(text)


# hypothesmith compiles what it generates, and CPython's compiler warns about some of it.
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_on_python_programs_both_front_ends_agree(text: str) -> None:
    assert parser.parse_program(text) == by_lark(text)


@pytest.mark.parametrize(
    "text",
    [
        "x = (f)(1)",  # a parenthesised callee
        "(x) = 1",  # a parenthesised target
        "(x) += 1",
        "for (v) in xs:\n    print(v)",
        'x = {("k"): 1}',  # a parenthesised key
        'x = {"a": 1, ("k"): 2}',
        'x = {"a": 1, # ,\n ("k"): 2}',  # a comma in a comment is no comma
        "x = map(xs, (lambda v: v))",  # a parenthesised lambda
        "x = map(xs, f=(lambda v: v))",
        "x = map(xs, lambda v,: v)",  # a trailing comma in the parameters
        "x = 1;",  # a semicolon
        "x = 1; y = 2",
        "if x: y = 1",  # a body on the header's line
        "if x:\n    y = 1\nelse: y = 2",
        'x = "a" "b"',  # implicit concatenation
        'x = f"a" "b"',
        "x = 0x10", "x = 1_0", "x = 00", "x = .5", "x = 5.", "x = 1j",  # number spellings
        'x = r"a"', 'x = u"a"', 'x = b"a"', 'x = """a"""', 'x = "\\x41"',  # string spellings
        "ｘ = 1",  # NFKC-folded to `x` by CPython
        "x = +1", "x = ~1", "x = 2 ** 3", "x = a @ b", "x = a << 1",
        "x = a < b < c", "x = y = 1", "x = 1,", "x: int = 1", "x = [*xs]", "f(*xs)", "f(**k)",
        "x = xs[1:2]", "x = xs[1, 2]", "x = (y := 1)", "x = {1, 2}", "x = ...", "return",
        "x.y = 1", "x[0] = 1", "x /= 2", "for a, b in xs:\n    print(a)",
        "for v in xs:\n    print(v)\nelse:\n    print(1)",
        "x = lambda v: v", "x = f(lambda: 1)", "x = f(lambda *a: 1)", "x = f(lambda v=1: v)",
        "x = f(lambda v: lambda w: w)", "x = a if b else lambda v: v",
        "x = s.lower()", "x = f(1)(2)", "x = [v for v in xs]", "x = _y", "x = __import__('os')",
        "  x = 1", "x = 1 \\\n + 2", "if x:\n\ty = 1", "x = 1\fy = 2",
        "x = 1if y else 2",  # a SyntaxWarning in CPython: left to lark
    ],
)  # fmt: skip
def test_what_cpython_reads_but_the_dsl_does_not_have_is_left_to_lark(text: str) -> None:
    assert by_python(text) is None
    assert parser.parse_program(text) == by_lark(text)


@pytest.mark.parametrize(
    "text",
    [
        "import os", "from os import path", "def f():\n    return 1", "class C:\n    x = 1",
        "while x:\n    y = 1", "try:\n    y = 1\nexcept E:\n    y = 2", "with f(x):\n    y = 1",
        "raise f(x)", "del x", "global x", "nonlocal x", "x = f(yield)",
        "async def f():\n    y = 1", "x = f(await y)", "assert x", "pass",
        "for v in xs:\n    break", "for v in xs:\n    continue", "x = a is b", "x = a is not None",
    ],
)  # fmt: skip
def test_a_keyword_the_dsl_lacks_is_left_to_lark_which_names_it(text: str) -> None:
    # parse_program looks for such a keyword only once the CPython front end has not taken a
    # text: these must never be taken.
    assert sorted(parser.KEYWORD_HINTS) == sorted(
        {"import", "from", "def", "class", "while", "try", "with", "raise", "del", "global"}
        | {"nonlocal", "yield", "async", "await", "assert", "lambda", "pass", "break"}
        | {"continue", "is"}
    )
    assert by_python(text) is None
    assert parser._first_reserved_word(text) is not None
    refused = parser.parse_program(text)
    assert isinstance(refused, Finding) and refused == by_lark(text)


@pytest.mark.parametrize("name", ["NAME", "INT", "FLOAT", "STRING", "FSTRING"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_terminal_shapes_are_read_from_the_grammar_as_lark_compiles_them(
    name: str, data: st.DataObject
) -> None:
    theirs = re.compile(lark_parser().get_terminal(name).pattern.to_regexp())
    ours = terminal(name)
    assert ours.fullmatch(data.draw(st.from_regex(theirs, fullmatch=True)))
    assert theirs.fullmatch(data.draw(st.from_regex(ours, fullmatch=True)))
