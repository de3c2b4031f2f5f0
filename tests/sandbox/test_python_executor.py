"""The plain-Python executor: notebook semantics in one persistent namespace."""

from __future__ import annotations

import pytest

from safeexec.sandbox.python_executor import PythonExecutor


def test_the_final_expression_is_returned_as_repr_text() -> None:
    executor = PythonExecutor()
    assert executor.execute("x = [1, 2]\nx + [3]", filename="<cell-1>") == "[1, 2, 3]"
    assert executor.execute("x.append(9)", filename="<cell-2>") is None
    assert executor.execute("'text'", filename="<cell-3>") == "'text'"


def test_state_persists_until_reset_and_tools_survive_reset() -> None:
    executor = PythonExecutor()
    executor.bind_tools({"double": lambda n: n * 2})
    executor.execute("kept = double(21)", filename="<cell-1>")
    assert executor.execute("kept", filename="<cell-2>") == "42"
    executor.reset()
    with pytest.raises(NameError):
        executor.execute("kept", filename="<cell-3>")
    assert executor.execute("double(2)", filename="<cell-4>") == "4"


def test_user_exceptions_and_syntax_errors_propagate() -> None:
    executor = PythonExecutor()
    with pytest.raises(ZeroDivisionError):
        executor.execute("1 / 0", filename="<cell-1>")
    with pytest.raises(SyntaxError):
        executor.execute("def (:", filename="<cell-2>")
