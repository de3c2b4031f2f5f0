"""One trimming rule for tracebacks, whether from a live exception or from printed text."""

from __future__ import annotations

import traceback

from safeexec._support import tracebacks
from safeexec._support.tracebacks import (
    exception_message,
    format_exception,
    is_model_file,
    is_safeexec_file,
    trim_traceback_lines,
)
from safeexec.model.codec import to_json

# This test's frame (the runner), then the model's cell, then a library the cell called, which
# calls into this package (a safeexec frame below the model's code), which calls json.
_CELL = "def inner():\n    to_json({Broken(): 1})\ninner()\n"


class Broken:
    """A value whose JSON form fails inside the standard library, reached through safeexec."""

    def __str__(self) -> str:
        import json

        return str(json.loads("{"))


def _raise_from_cell() -> BaseException:
    namespace: dict[str, object] = {"to_json": to_json, "Broken": Broken}
    try:
        exec(compile(_CELL, "<cell-7>", "exec"), namespace)
    except Exception as exc:
        return exc
    raise AssertionError("the cell did not raise")


def _frame_files(text: str) -> list[str]:
    return [line.split('"')[1] for line in text.splitlines() if line.startswith('  File "')]


def test_a_live_traceback_starts_at_the_model_code_and_keeps_what_it_called() -> None:
    error = _raise_from_cell()
    untrimmed = "".join(traceback.format_exception(error))
    every = _frame_files(untrimmed)
    assert every[0] == __file__ and any(is_safeexec_file(f) for f in every)
    files = _frame_files(format_exception(error))
    assert files[:2] == ["<cell-7>", "<cell-7>"]
    assert files[2] == __file__  # Broken.__str__, called from safeexec.model.codec (dropped)
    assert files[3:] and all("json" in f for f in files[3:])
    assert format_exception(error).rstrip().endswith("line 1 column 2 (char 1)")


def test_printed_and_live_tracebacks_are_trimmed_the_same_way() -> None:
    error = _raise_from_cell()
    printed = "".join(traceback.format_exception(error)).splitlines()
    assert trim_traceback_lines(printed) == format_exception(error).splitlines()


def test_safeexec_frames_are_dropped_after_the_model_code_too() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/safeexec/sandbox/worker.py", line 3, in run',
        "    runner()",
        '  File "<cell-1>", line 1, in <module>',
        "    tool()",
        '  File "/x/safeexec/sandbox/worker.py", line 9, in call_tool',
        "    raise ToolError(text)",
        "ToolError: refused",
    ]
    assert trim_traceback_lines(lines) == [
        "Traceback (most recent call last):",
        '  File "<cell-1>", line 1, in <module>',
        "    tool()",
        "ToolError: refused",
    ]


def test_a_traceback_without_model_code_keeps_no_frames() -> None:
    try:
        compile("x = (", "<cell-2>", "exec")
    except SyntaxError as exc:
        text = format_exception(exc)
    assert _frame_files(text) == ["<cell-2>"]  # the SyntaxError's own location line
    assert "SyntaxError" in text


def test_the_rule_that_says_which_files_are_the_models() -> None:
    assert is_model_file("<cell-3>") and is_model_file("<string>")
    assert not is_model_file("<frozen importlib._bootstrap>")
    assert not is_model_file("/usr/lib/python3/json/decoder.py")
    assert is_safeexec_file(tracebacks.__file__)
    assert not is_safeexec_file("/usr/lib/python3/json/decoder.py")


def test_a_long_chain_is_cut_before_it_is_formatted() -> None:
    error: BaseException = ValueError("0")
    for n in range(1, 5000):
        try:
            raise ValueError(str(n)) from error
        except ValueError as exc:
            error = exc
    text = format_exception(error)
    assert text.count("ValueError:") == 16


def test_a_huge_exception_group_is_shown_as_one_line() -> None:
    group = ExceptionGroup("many", [ValueError(str(n)) for n in range(1000)])
    assert format_exception(group) == "ExceptionGroup: many (1000 sub-exceptions)\n"


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_an_exception_whose_str_raises_still_formats() -> None:
    assert exception_message(_Unprintable()) == "<unprintable>"
    assert format_exception(_Unprintable()).endswith("_Unprintable: <exception str() failed>\n")
    assert len(exception_message(ValueError("x" * 10_000))) == 2000
