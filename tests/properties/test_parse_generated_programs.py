"""``parse`` on hypothesmith's generated programs agrees with CPython's ``compile``."""

from __future__ import annotations

import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeexec.model.values import Action
from safeexec.parse import Parsed, ParseFailure, parse


def _cpython_accepts(code: str) -> bool:
    # parse() normalises newlines first, as the brief's one decode path demands; CPython's own
    # handling of a lone CR differs in corners (a backslash before CRLF at the end of the file).
    code = code.replace("\r\n", "\n").replace("\r", "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(code, "<generated>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar(), st.data())
def test_parse_agrees_with_cpython_compile_on_generated_programs(
    program: str, data: st.DataObject
) -> None:
    # A generated program, or the same program with one character removed (mostly invalid).
    if program and data.draw(st.booleans(), label="mutate"):
        cut = data.draw(st.integers(0, len(program) - 1), label="cut")
        program = program[:cut] + program[cut + 1 :]
    result = parse(Action.create(program))
    if _cpython_accepts(program):
        assert isinstance(result, Parsed) or result.finding.rule == "SX004", result
    else:
        assert isinstance(result, ParseFailure)
        assert result.finding.rule in {"SX001", "SX004", "SX005"}, result.finding
