"""The restricted executor's compile cache: the same cell is transformed once per transformer,
each run keeps its own cell's file name, and refusals are never cached."""

from __future__ import annotations

import sys
import traceback

import pytest

from safeexec.restricted import OperationBudget, RestrictedExecutor
from safeexec.restricted import executor as executor_module


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    executor_module._COMPILED.clear()


def test_the_same_cell_is_transformed_once_even_across_executors() -> None:
    code = "total = sum(i * i for i in range(4))\ntotal\n"
    assert RestrictedExecutor().execute(code, filename="<cell-1>") == "14"
    assert RestrictedExecutor().execute(code, filename="<cell-1>") == "14"
    stats = executor_module._COMPILED.statistics()
    assert (stats.hits, stats.misses) == (1, 1)


def test_a_cached_cell_reports_errors_under_its_own_file_name() -> None:
    executor = RestrictedExecutor()
    code = "def f(x):\n    return [1 / v for v in x]\nf([0])\n"
    for cell in ("<cell-1>", "<cell-2>"):
        with pytest.raises(ZeroDivisionError) as raised:
            executor.execute(code, filename=cell)
        frames = traceback.extract_tb(raised.value.__traceback__)
        cells = [frame.filename for frame in frames if not frame.filename.endswith(".py")]
        # Module, function, comprehension (inlined into the function from 3.12: PEP 709).
        assert cells == [cell] * (3 if sys.version_info < (3, 12) else 2)
    assert executor_module._COMPILED.statistics().hits == 1


def test_a_counting_executor_never_gets_a_cell_compiled_without_ticks() -> None:
    code = "n = 0\nfor i in range(1000):\n    n += 1\n"
    RestrictedExecutor().execute(code, filename="<t>")
    budget = OperationBudget(100)
    with pytest.raises(Exception):  # noqa: B017 - whatever the loop raised when the budget ran out
        RestrictedExecutor(count_operations=True).execute(code, filename="<t>", budget=budget)
    assert budget.exhausted


def test_a_refused_cell_records_its_denials_on_every_run() -> None:
    executor = RestrictedExecutor()
    for _ in range(2):
        with pytest.raises(SyntaxError, match="refused"):
            executor.execute("x.__class__ = 1\n", filename="<t>")
        assert executor.last_denials and executor.last_denials[0][0] == "compile"
    assert executor_module._COMPILED.statistics().entries == 0


def test_a_cell_resent_under_its_own_name_reuses_its_code_objects() -> None:
    executor = RestrictedExecutor()
    code = "def f():\n    return 1\nf()\n"
    first = executor._compile(code, "<cell-1>")
    assert executor._compile(code, "<cell-1>") is first  # nothing to rename
    renamed, _ = executor._compile(code, "<cell-2>")
    assert renamed is not first[0] and renamed.co_filename == "<cell-2>"


def test_the_last_cell_of_an_executor_is_reused_only_for_the_same_code_and_name() -> None:
    executor = RestrictedExecutor()
    one, two = "x = 1\nx\n", "x = 2\nx\n"
    first = executor._compile(one, "<cell-1>")
    assert executor._compile(one, "<cell-1>") is first
    assert executor.execute(two, filename="<cell-1>") == "2"  # other code, same name
    assert executor.execute(one, filename="<cell-1>") == "1"
    renamed, _ = executor._compile(one, "<cell-2>")
    assert renamed.co_filename == "<cell-2>"  # same code, other name


def test_the_last_cell_memo_is_what_runs_so_its_key_must_hold() -> None:
    # The memo is trusted as it stands: a wrong entry under a cell's key would run instead of
    # the cell (which is why the tests above pin the key to the code and the file name).
    executor = RestrictedExecutor()
    other = executor._compile("x = 'other'\nx\n", "<t>")
    executor._last_compiled = ("x = 'mine'\nx\n", "<t>", other)
    assert executor.execute("x = 'mine'\nx\n", filename="<t>") == "'other'"
