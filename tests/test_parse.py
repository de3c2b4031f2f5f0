from __future__ import annotations

import argparse
import ast
import gc
import json
import sys
import unicodedata
import warnings
from pathlib import Path

import libcst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeexec.model.values import Action, Enforcement, Severity, Span
from safeexec.parse import Parsed, ParseFailure, parse


def _parsed(code: str) -> Parsed:
    result = parse(Action.create(code))
    assert isinstance(result, Parsed), result
    return result


def _failure(code: str, rule: str, **options: int) -> ParseFailure:
    result = parse(Action.create(code), **options)
    assert isinstance(result, ParseFailure), f"expected {rule}, got a Parsed"
    assert result.finding.rule == rule, result.finding
    assert result.finding.severity is Severity.HIGH
    assert result.finding.enforcement is Enforcement.DENY
    # Findings travel to the audit log and to the model: they must always encode as UTF-8 JSON.
    json.dumps(result.finding.to_json(), ensure_ascii=False).encode("utf-8")
    return result


def _names(code: str) -> set[str]:
    names: set[str] = set()
    stack: list[libcst.CSTNode] = [libcst.parse_module(code)]
    while stack:
        node = stack.pop()
        if isinstance(node, libcst.Name):
            names.add(node.value)
        stack.extend(node.children)
    return names


def test_valid_code_gives_cpythons_tree_of_the_exact_text() -> None:
    action = Action.create("import math\nprint(math.sqrt(2))\n")
    result = parse(action)
    assert isinstance(result, Parsed)
    assert result.action is action
    assert result.code == action.code
    assert isinstance(result.tree, ast.Module)
    assert ast.dump(result.tree) == ast.dump(ast.parse(action.code))


def test_empty_source_parses_to_an_empty_module() -> None:
    assert _parsed("").tree.body == []


def test_syntax_error_points_at_the_offending_column_with_a_caret() -> None:
    finding = _failure("x = (1,\n  2 +)\n", "SX001").finding
    assert finding.name == "syntax-error"
    assert finding.message == "invalid syntax"
    assert finding.span == Span(start_line=2, start_column=6, end_line=2, end_column=6)
    assert finding.evidence == "  2 +)\n     ^"


def test_indentation_error_reports_cpythons_message_and_the_line() -> None:
    finding = _failure("if ready:\npass\n", "SX001").finding
    assert finding.message == "expected an indented block after 'if' statement on line 1"
    assert finding.span is not None
    assert (finding.span.start_line, finding.span.start_column) == (2, 1)
    assert finding.evidence.splitlines() == ["pass", "^^^^"]


def test_tab_error_is_a_syntax_error() -> None:
    finding = _failure("if x:\n\tpass\n        pass\n", "SX001").finding
    assert finding.message == "inconsistent use of tabs and spaces in indentation"
    assert finding.span is not None
    assert finding.span.start_line == 3


def test_syntax_error_columns_count_characters_not_bytes() -> None:
    finding = _failure('é = "é" +\n', "SX001").finding
    assert finding.span is not None
    assert finding.span.start_column == 10
    assert finding.evidence == 'é = "é" +\n         ^'


def test_caret_keeps_tabs_so_it_lines_up_under_the_column() -> None:
    finding = _failure("def f():\n\treturn (1 +)\n", "SX001").finding
    line, caret = finding.evidence.split("\n")
    assert line == "\treturn (1 +)"
    assert finding.span is not None
    assert caret.startswith("\t")
    assert caret.index("^") == finding.span.start_column - 1
    assert line[caret.index("^")] == ")"


def test_grammar_is_the_running_pythons_not_libcsts_newest() -> None:
    code = "type Pair = tuple[int, int]\n"  # PEP 695, Python 3.12
    if sys.version_info < (3, 12):
        assert _failure(code, "SX001").finding.span is not None
    else:
        _parsed(code)


def test_compiler_stage_errors_are_syntax_errors_too() -> None:
    finding = _failure("x = 1\nreturn x\n", "SX001").finding
    assert finding.message == "'return' outside function"
    assert finding.span is not None
    assert (finding.span.start_line, finding.span.start_column) == (2, 1)


def test_compiler_error_columns_are_converted_from_bytes_to_characters() -> None:
    finding = _failure("é = 1; return 2\n", "SX001").finding
    assert finding.span is not None
    assert finding.span.start_column == 8
    assert finding.evidence == "é = 1; return 2\n       ^^^^^^^^"


def test_long_line_evidence_is_a_window_around_the_column() -> None:
    finding = _failure("x = 1; " * 2000 + "y = (\n", "SX001").finding
    line, caret = finding.evidence.split("\n")
    assert len(line) < 200
    assert line.startswith("…")
    assert line[len(caret) - 1] == "("


def test_null_byte_is_a_syntax_error_shown_visibly() -> None:
    finding = _failure("x = 1\ny = 'a\0b'\n", "SX001").finding
    assert "null bytes" in finding.message
    assert finding.span == Span(start_line=2, start_column=7, end_line=2, end_column=7)
    assert finding.evidence == "y = 'a␀b'\n      ^"


def test_lone_surrogate_is_an_encoding_finding_not_a_crash() -> None:
    finding = _failure("x = 1\nname = '\ud800'\n", "SX005").finding
    assert finding.name == "invalid-encoding"
    assert "U+D800" in finding.message
    assert finding.span is not None
    assert (finding.span.start_line, finding.span.start_column) == (2, 9)
    assert "\ud800" not in finding.evidence


def test_undecodable_utf8_byte_is_named_in_the_finding() -> None:
    code = b"x = '\xff'\n".decode("utf-8", "surrogateescape")
    finding = _failure(code, "SX005").finding
    assert "0xFF" in finding.message


def test_foreign_coding_cookie_is_refused() -> None:
    finding = _failure("# -*- coding: latin-1 -*-\nx = 'é'\n", "SX005").finding
    assert "latin-1" in finding.message
    assert finding.span is not None
    assert finding.span.start_line == 1


def test_coding_cookie_on_the_second_line_is_refused() -> None:
    _failure("#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = 1\n", "SX005")


@pytest.mark.parametrize(
    "cookie", ["# -*- coding: utf-8 -*-", "# coding=UTF8", "# vim: set fileencoding=utf_8 :"]
)
def test_utf8_coding_cookie_is_accepted(cookie: str) -> None:
    _parsed(f"{cookie}\nx = 1\n")


def test_crlf_and_lone_cr_are_normalised_to_the_text_that_runs() -> None:
    parsed = _parsed('x = 1\r\ntext = """a\r\nb\rc"""\ry = 2\r\n')
    assert parsed.code == 'x = 1\ntext = """a\nb\nc"""\ny = 2\n'
    assert ast.dump(parsed.tree) == ast.dump(
        ast.parse('x = 1\r\ntext = """a\r\nb\rc"""\ry = 2\r\n')
    )


def test_crlf_does_not_shift_finding_positions() -> None:
    finding = _failure("x = 1\r\ny = (\r\n", "SX001").finding
    assert finding.span is not None
    assert finding.span.start_line == 2


def test_leading_bom_is_stripped_from_the_text_that_runs() -> None:
    parsed = _parsed("\ufeffx = 1\n")
    assert parsed.code == "x = 1\n"


def test_fullwidth_identifiers_are_checked_as_the_names_cpython_binds() -> None:
    parsed = _parsed("ｅｘｅｃ('print(1)')\nimport ｏｓ\nｏｓ.ｓｙｓｔｅｍ('true')\n")
    assert parsed.code == "exec('print(1)')\nimport os\nos.system('true')\n"
    assert {"exec", "os", "system"} <= _names(parsed.code)
    assert not any(not name.isascii() for name in _names(parsed.code))


def test_ligature_identifier_is_normalised() -> None:
    assert _parsed("ﬁle = 1\n").code == "file = 1\n"


def test_non_ascii_inside_strings_and_comments_is_left_alone() -> None:
    code = "x = 'ｅｘｅｃ'  # ｅｘｅｃ\nnaïve = 1\n"
    assert _parsed(code).code == code


def test_text_already_in_nfkc_is_kept_as_is() -> None:
    code = "température = 21  # °C\nprint(f'{température} °C')\n"
    assert _parsed(code).code == code


def test_identifier_that_normalises_to_a_keyword_is_refused() -> None:
    _failure("ｉｆ = 1\n", "SX003")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 tokenizes f-strings (PEP 701)")
def test_unnormalised_identifier_inside_an_fstring_is_refused() -> None:
    finding = _failure("x = 1\nprint(f'{ｘ}')\n", "SX003").finding
    assert "ｘ" in finding.message


@pytest.mark.skipif(sys.version_info < (3, 12), reason="f-string tokens from 3.12 (PEP 701)")
def test_unnormalised_identifier_inside_an_fstring_is_normalised_where_tokenize_sees_it() -> None:
    # 3.12's tokenizer yields the names inside an f-string: they are rewritten like any other,
    # and the f-string's literal text is left alone.
    assert _parsed("x = 1\nprint(f'ｘ {ｘ}')\n").code == "x = 1\nprint(f'ｘ {x}')\n"


def test_too_many_nested_parentheses_is_cpythons_syntax_error_without_crashing() -> None:
    # libcst's native parser segfaults on ~1,500 nested parentheses; it must never see them.
    finding = _failure("(" * 1500 + ")" * 1500, "SX001").finding
    assert finding.message == "too many nested parentheses"
    assert len(finding.evidence) < 400


def test_hundred_thousand_nested_parentheses_do_not_crash_or_hang() -> None:
    _failure("x = " + "(" * 100_000 + ")" * 100_000 + "\n", "SX001")


def test_unclosed_hundred_thousand_brackets_do_not_crash() -> None:
    _failure("[" * 100_000, "SX001")


@pytest.mark.parametrize(
    "code",
    [
        "+".join(["a"] * 300),
        "-" * 1000 + "a",
        "a" + ".b" * 1000,
        "f" + "()" * 1000,
        "a if b else " * 500 + "c",
        "lambda: " * 500 + "a",
    ],
    ids=["additions", "unary", "attributes", "calls", "ternaries", "lambdas"],
)
def test_nesting_cpython_accepts_but_beyond_the_limit_is_refused(code: str) -> None:
    ast.parse(code)  # CPython itself accepts these
    finding = _failure(code, "SX004").finding
    assert finding.name == "nesting-too-deep"
    assert "200" in finding.message


def test_nesting_beyond_cpythons_own_stack_is_refused() -> None:
    _failure("+".join(["a"] * 5000), "SX004")


def test_nesting_limit_is_a_parameter() -> None:
    code = "x = " + "[" * 60 + "]" * 60 + "\n"
    assert isinstance(parse(Action.create(code)), Parsed)
    _failure(code, "SX004", max_nesting=50)


def test_many_blank_lines_are_too_much_work_for_the_checker() -> None:
    finding = _failure("\n" * 900_000 + "x = 1\n", "SX002").finding
    assert "max_parse_work" in finding.message


def test_many_deeply_nested_literals_are_too_much_work_for_the_checker() -> None:
    # Each is within max_nesting, but libcst's time grows with the square of the depth.
    _failure(("x = " + "[" * 150 + "]" * 150 + "\n") * 300, "SX002")


def test_parse_work_limit_is_a_parameter() -> None:
    code = "x = 1\n" * 100
    assert isinstance(parse(Action.create(code)), Parsed)
    _failure(code, "SX002", max_parse_work=300)


def test_a_large_real_module_is_within_the_default_limits() -> None:
    code = Path(argparse.__file__).read_text(encoding="utf-8")
    assert code.count("\n") > 2000
    assert _parsed(code).code == code


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
def test_parser_mismatch_is_refused() -> None:
    # CPython accepts a comparison glued to an awaited literal; libcst insists on a space.
    code = "async def f(x):\n    return await 1in x\n"
    compile(code, "<test>", "exec")
    finding = _failure(code, "SX003").finding
    assert finding.name == "parser-mismatch"
    assert "libcst" in finding.message
    assert "space" in finding.message


@pytest.mark.parametrize(
    "code",
    [
        "x = " + " ".join(['"a"'] * 5000) + "\n",
        "x = (\n" + "\n".join(["    'line'"] * 300) + "\n)\n",
        "x = " + " and ".join(["a"] * 300) + "\n",
    ],
    ids=["5000-adjacent-strings", "300-strings-over-lines", "300-term-and"],
)
def test_chains_flat_in_cpython_but_nested_in_libcst_count_as_nesting(code: str) -> None:
    ast.parse(code)
    _failure(code, "SX004")


def test_a_docstring_or_a_few_adjacent_strings_are_fine() -> None:
    code = 'def f():\n    """Doc\n    string."""\n    return ("a"\n            "b" f"{1}")\n'
    assert _parsed(code).code == code


def test_source_libcst_cannot_reprint_exactly_is_refused() -> None:
    # CPython resets the indentation column at a form feed; libcst drops it.
    code = "if x:\n    a\n  \f    b\n"
    ast.parse(code)
    _failure(code, "SX003")


@pytest.mark.parametrize(
    "code",
    ["é = 1\n\n #\n", "é = 1\n #\n #\n", "é = 1\n\n #\n #\\\n", "é = 1\n\n #'\x1f\n #\n"],
    ids=["blank-line", "comments", "comment-with-backslash", "comment-with-quote"],
)
def test_blank_lines_and_final_comments_libcst_drops_are_not_a_mismatch(code: str) -> None:
    # Non-ASCII text, so the reprint comparison runs; libcst drops these harmless lines.
    assert libcst.parse_module(code).code != code
    assert _parsed(code).code == code


def test_trailing_whitespace_after_a_final_backslash_is_kept() -> None:
    # CPython accepts a continuation backslash followed by two newlines at the end, not one.
    assert _parsed("x = 1\n\\\n\n").code == "x = 1\n\\\n\n"


def test_trailing_whitespace_is_trimmed_to_one_final_newline() -> None:
    # libcst drops a trailing comment when whitespace follows it at the end of the file.
    parsed = _parsed("a = 1\n #\n \t\n\n ")
    assert parsed.code == "a = 1\n #\n"
    assert libcst.parse_module(parsed.code).code == parsed.code


EVERY_STATEMENT_KIND = """\
import os
async def f():
    async with a as b:
        async for x in y:
            del x
    try:
        pass
    except* ValueError:
        pass
if a: b; c
elif d:
    pass
else:
    if e: pass
for i in x: pass
else: pass
try:
    x = 1
except E as e:
    raise
else:
    y: int = 2
finally:
    global g
match p:
    case 1: pass
    case _:
        assert x
while 0:
    break
class C:
    def m(self): return 1
with a: z += 1
"""


def test_both_parsers_agree_on_the_structure_of_every_statement_kind() -> None:
    _parsed(EVERY_STATEMENT_KIND)


def test_different_statement_structure_is_a_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fault injection: a libcst that puts the last line inside the block, unlike CPython.
    real = libcst.parse_module
    monkeypatch.setattr(
        libcst, "parse_module", lambda code, config: real("if a:\n    b\n    c\n", config)
    )
    finding = _failure("if a:\n    b\nc\n", "SX003", always_cross_check=True).finding
    assert "statement structure" in finding.message


def test_a_crashing_libcst_is_a_finding_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(code: str, config: object) -> libcst.Module:
        raise RuntimeError("native parser panicked")

    monkeypatch.setattr(libcst, "parse_module", crash)
    assert "panicked" in _failure("é = 1\n", "SX003").finding.message
    monkeypatch.setattr(libcst, "parse_module", lambda code, config: [][1])
    _failure("é = 1\n", "SX003")


@pytest.mark.parametrize(
    "code",
    ["x = 1\n", "print(1)\nif x:\n    y = [i for i in range(3)]\n", "s = 'a' 'b' f'{c!r:>4}'\n"],
    ids=["assignment", "block", "strings"],
)
def test_plain_text_is_parsed_without_libcst(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    # No rule reads libcst's tree, and plain printable ASCII is not a text class the parsers
    # are known to read differently: libcst is not consulted (a crashing one would be SX003).
    def crash(code: str, config: object) -> libcst.Module:
        raise RuntimeError("libcst was consulted")

    monkeypatch.setattr(libcst, "parse_module", crash)
    assert _parsed(code).code == code
    _failure(code, "SX003", always_cross_check=True)


@pytest.mark.parametrize(
    "code",
    ["é = 1\n", "\fx = 1\n", "x = (1 +\\\n 2)\n", "y = [1for x in z]\n", "z = 0x1for y\n"],
    ids=["non-ascii", "form-feed", "backslash-continuation", "glued-number", "glued-hex"],
)
@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
def test_text_the_parsers_may_read_differently_is_cross_checked(
    monkeypatch: pytest.MonkeyPatch, code: str
) -> None:
    def crash(code: str, config: object) -> libcst.Module:
        raise RuntimeError("libcst was consulted")

    monkeypatch.setattr(libcst, "parse_module", crash)
    compile(code, "<test>", "exec")
    assert "consulted" in _failure(code, "SX003").finding.message


def test_libcst_running_out_of_stack_is_a_nesting_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflow(code: str, config: object) -> libcst.Module:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(libcst, "parse_module", overflow)
    _failure("é = 1\n", "SX004")


def test_two_megabyte_input_is_refused_without_parsing() -> None:
    finding = _failure("x = 1\n" * 350_000, "SX002").finding
    assert finding.name == "input-too-large"
    assert "2,100,000" in finding.message


def test_size_limit_counts_utf8_bytes() -> None:
    code = "s = '" + "é" * 600 + "'\n"
    _failure(code, "SX002", max_source_bytes=1000)
    assert isinstance(parse(Action.create(code), max_source_bytes=2000), Parsed)


def test_warnings_neither_leak_nor_turn_into_errors() -> None:
    code = "import re\npattern = re.compile('\\d+')\nok = 1 is 1\nf = lambda: 1()\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("error")
        result = parse(Action.create(code))
    assert isinstance(result, Parsed)
    assert caught == []


def test_parse_uses_no_state_between_calls() -> None:
    first = _parsed("x = 1\n")
    _failure("x = (\n", "SX001")
    assert ast.dump(_parsed("x = 1\n").tree) == ast.dump(first.tree)


_ANY_CHARACTER = st.characters(exclude_categories=())
_PYTHONISH = st.sampled_from(
    [
        *"()[]{}+-*/%@=:;,.'\"#\\ \t\n\r\f\0abcxyzé0123456789",
        *("ｅ", "ﬁ", "ª", "µ", "\u0301", "\u2163", "\ud800", "\udcff", "\ufeff"),
        *("\x0b", "\x1c", "\x85", "\u2028", "\u00a0", "\u3000"),
        *("if ", "def ", "lambda ", "f'", '"""'),
        "# coding: latin-1\n",
    ]
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=_ANY_CHARACTER))
def test_parse_never_raises_on_arbitrary_text(text: str) -> None:
    result = parse(Action.create(text))
    assert isinstance(result, Parsed | ParseFailure)


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PYTHONISH, max_size=60).map("".join))
def test_parse_never_raises_on_python_like_text(text: str) -> None:
    result = parse(Action.create(text))
    if isinstance(result, ParseFailure):
        json.dumps(result.finding.to_json(), ensure_ascii=False).encode("utf-8")
    else:
        assert ast.dump(result.tree) == ast.dump(ast.parse(result.code))
        assert all(unicodedata.is_normalized("NFKC", name) for name in _names(result.code))


def test_the_garbage_collector_is_paused_while_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real_parse_module = libcst.parse_module

    def recording_parse_module(*args: object, **kwargs: object) -> libcst.Module:
        seen.append(gc.isenabled())
        return real_parse_module(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(libcst, "parse_module", recording_parse_module)
    assert gc.isenabled()
    assert isinstance(parse(Action.create("é = 1\n")), Parsed)
    assert seen == [False]
    assert gc.isenabled()


@pytest.mark.parametrize(
    "code", ["x = 1\n", "return 1\n", "x = (\n"], ids=["ok", "compile", "syntax"]
)
def test_parse_leaves_the_garbage_collector_as_it_found_it(code: str) -> None:
    parse(Action.create(code))
    assert gc.isenabled()
    gc.disable()
    try:
        parse(Action.create(code))
        assert not gc.isenabled()
    finally:
        gc.enable()
