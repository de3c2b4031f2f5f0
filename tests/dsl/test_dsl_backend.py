"""Compiled DSL runs in the confined worker with metered proxies: results, the plan's bounds
enforced at run time, refused programs never reach a tool, and the compiled module names nothing
the checker did not resolve."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from dsl_support import front, granted, run, worker_backend

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.capping import CappedText
from safeexec.backends.dsl import InProcessDslBackend
from safeexec.capabilities.gateway import CapabilitySet, tool
from safeexec.dsl import ops
from safeexec.dsl.compiler import compile_program
from safeexec.dsl.limits import DslLimits
from safeexec.errors import BackendUnavailable
from safeexec.model.values import ExecStatus
from safeexec.sandbox import dsl_runtime as runtime
from safeexec.sandbox.dsl_runtime import DslLimitError, DslRuntime, DslRuntimeError

SHOPPING = (
    'items = search_products(query="usb-c cable", max_results=20)\n'
    "ok = filter(items, lambda p: p.in_stock and p.price <= 15.0)\n"
    "best = min_by(ok, lambda p: p.price)\n"
    "return reserve(sku=best.sku)\n"
)


def test_a_pipeline_runs_and_its_value_is_the_output(tmp_path: Path) -> None:
    ran = run(SHOPPING, tmp_path)
    assert ran.result.status is ExecStatus.OK and ran.result.exit_code == 0
    assert ran.stdout == "RES-C-100-1\n"
    called = [e.tool for e in ran.result.events if e.kind == "tool_called"]
    assert called == ["search_products", "reserve"]
    assert ran.caps.statistics().calls == 2


def test_print_and_records_render_as_json(tmp_path: Path) -> None:
    ran = run('print("a", 1, [True, None], {"k": 2.5})\nreturn {"x": [1]}', tmp_path)
    assert ran.stdout == 'a 1 [true, null] {"k": 2.5}\n{"x": [1]}\n'


def test_a_runtime_error_is_an_error_status(tmp_path: Path) -> None:
    ran = run("xs = []\nreturn first(xs)", tmp_path)
    assert ran.result.status is ExecStatus.ERROR and ran.result.exit_code == 1
    assert ran.result.message == "DslRuntimeError: first() of an empty list"


def test_a_runtime_error_points_at_its_statement_in_the_program(tmp_path: Path) -> None:
    ran = run("xs = [1, 2]\ny = 0\nz = xs[y + 5]\nreturn z", tmp_path)
    assert ran.result.message == "DslRuntimeError: no item 5 in a list"
    assert "line 3, in <module>\n    z = xs[y + 5]\n" in ran.stderr


def test_a_program_the_backend_refuses_never_calls_a_tool(tmp_path: Path) -> None:
    caps = granted()
    source = 'for p in search_products(query="c"):\n    reserve(sku=p.sku)\nreturn 1'
    ran = run(source, tmp_path, caps=caps)
    assert ran.result.status is ExecStatus.ERROR
    assert "SX704" in ran.result.message
    assert caps.statistics().calls == 0 and not ran.result.events


def test_a_tool_result_over_the_item_cap_stops_the_run(tmp_path: Path) -> None:
    @tool
    def many() -> list[int]:
        return list(range(10))

    caps = CapabilitySet()
    caps.grant(many)
    backend = worker_backend(DslLimits(max_items=5))
    ran = run("xs = many()\nreturn len(xs)", tmp_path, caps=caps, backend=backend)
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    assert ran.result.message == (
        "DslLimitError: the result of many() holds 10 items, more than the cap of 5"
    )


def test_growth_by_plus_and_times_is_capped(tmp_path: Path) -> None:
    backend = worker_backend(DslLimits(max_text_chars=1000))
    text = run(
        's = "ab"\nfor i in range(20):\n    s += s\nreturn len(s)', tmp_path / "a", backend=backend
    )
    limit = ExecStatus.LIMIT_EXCEEDED
    assert text.result.status is limit and "longer than 1000" in text.result.message
    big = run("x = 3\nfor i in range(40):\n    x *= x\nreturn 1", tmp_path / "b")
    assert big.result.status is limit and "4096 bits" in big.result.message
    lists = run("xs = [1]\nfor i in range(20):\n    xs += xs\nreturn len(xs)", tmp_path / "c")
    assert lists.result.status is limit and "cap of 1000" in lists.result.message


def test_the_runtime_meter_refuses_calls_and_iterations_past_the_plan() -> None:
    meter = DslRuntime(
        max_iterations=3, call_bounds={"t": 1}, max_items=10, max_text_chars=10,
        sink=CappedText(100),
    )  # fmt: skip
    call = meter.metered_tool("t", lambda **kwargs: 1)
    assert call() == 1
    with pytest.raises(DslLimitError, match="more than the planned 1"):
        call()
    with pytest.raises(DslLimitError, match="more than 3 iterations"):
        list(meter.h_loop([1, 2, 3, 4], 10))
    with pytest.raises(DslLimitError, match="bounded it to 2"):
        list(meter.h_loop([1, 2, 3], 2))


def test_a_loop_stops_at_its_first_item_past_the_iteration_bound_or_the_budget() -> None:
    meter = DslRuntime(
        max_iterations=3, call_bounds={}, max_items=10, max_text_chars=10, sink=CappedText(100)
    )
    seen = []
    with pytest.raises(DslLimitError, match="more than 3 iterations"):
        for item in meter.h_loop([1, 2, 3, 4], 10):
            seen.append(item)
    assert seen == [1, 2, 3] and meter.iterations == 4
    stopped = DslRuntime(
        max_iterations=10, call_bounds={}, max_items=10, max_text_chars=10,
        sink=CappedText(100), operations=iter(range(2)),
    )  # fmt: skip
    seen = []
    with pytest.raises(DslLimitError, match="the run was stopped"):
        for item in stopped.h_loop([1, 2, 3], 10):
            seen.append(item)
    assert seen == [1, 2]


@pytest.mark.parametrize("sign", [1, -1])
def test_integer_results_are_capped_at_4096_bits_exactly(sign: int) -> None:
    meter = DslRuntime(
        max_iterations=1, call_bounds={}, max_items=10, max_text_chars=10, sink=CappedText(100)
    )
    widest = sign * (2**4096 - 1)
    assert meter.h_add(widest - sign, sign) == widest
    assert meter.h_mul(widest, 1) == widest
    with pytest.raises(DslLimitError, match="4096 bits"):
        meter.h_add(widest, sign)
    with pytest.raises(DslLimitError, match="4096 bits"):
        meter.h_mul(sign * 2**2048, 2**2048)
    with pytest.raises(DslRuntimeError, match="cannot combine bool and int"):
        meter.h_add(True, 1)  # a bool is not a number, fast path or not


def test_every_op_has_a_runtime_and_no_runtime_op_lacks_a_type_rule() -> None:
    implemented = {name[3:] for name in dir(DslRuntime) if name.startswith("op_")}
    assert implemented == set(ops.OPS)
    assert runtime.__all__  # the module's public face exists


def test_the_compiled_module_names_only_bindings_tools_and_helpers() -> None:
    source = (
        'hotels = take(search_hotels(city="BER"), 5)\n'
        'names = map(hotels, lambda h: f"{h.name} {h.nightly:.0f}")\n'
        "total = 0\n"
        "for h in hotels:\n"
        "    total += h.nightly * 2\n"
        'return {"names": names, "total": total if total > 0 else -1}\n'
    )
    result = front(source)
    assert result.accepted and result.checked is not None
    module = compile_program(result.checked)
    assert isinstance(module, ast.Module)
    names = {node.id for node in ast.walk(module) if isinstance(node, ast.Name)}
    helpers = {n for n in names if n.startswith("dsl_")}
    assert names - helpers == {"hotels", "names", "total", "h", "search_hotels"}
    banned = (ast.Attribute, ast.Import, ast.ImportFrom, ast.While, ast.FunctionDef, ast.Subscript)
    assert not [node for node in ast.walk(module) if isinstance(node, banned)]
    # A well-formed module: it unparses to Python that parses back to the same tree.
    assert ast.dump(ast.parse(ast.unparse(module))) == ast.dump(module)
    loops = [node for node in ast.walk(module) if isinstance(node, ast.For)]
    assert all(isinstance(loop.iter, ast.Call) for loop in loops)
    assert {loop.iter.func.id for loop in loops} == {"dsl_loop"}  # type: ignore[attr-defined]


def test_compile_refuses_a_program_the_checker_refused() -> None:
    result = front("return nope")
    assert result.checked is not None and not result.checked.ok
    with pytest.raises(ValueError, match="check it first"):
        compile_program(result.checked)


def test_the_in_process_dsl_mode_refuses_required_confinement_layers(tmp_path: Path) -> None:
    spec = SessionSpec(blobs=BlobStore(tmp_path / "b"), require=frozenset({"seccomp"}))
    with pytest.raises(BackendUnavailable, match="no confinement layers"):
        InProcessDslBackend().open(spec)


def test_a_computed_range_is_capped_at_run_time(tmp_path: Path) -> None:
    ran = run("n = 50 * 100\nfor i in range(n):\n    print(i)\nreturn 1", tmp_path)
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    assert (
        ran.result.message == "DslLimitError: range() holds 5000 items, more than the cap of 1000"
    )


def test_the_run_stops_where_the_plan_was_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Make the checker under-estimate every loop: the runtime meter must stop the run, and the
    # tool in the loop must not be called more often than the (wrong) plan said.
    from safeexec.dsl import checker

    original = checker._Checker.iteration

    def one(self: checker._Checker, t: object, span: object) -> tuple[object, int]:
        item, _ = original(self, t, span)  # type: ignore[arg-type]
        return item, 1

    monkeypatch.setattr(checker._Checker, "iteration", one)
    caps = granted()
    source = 'for t in ["ACME", "INIT", "GLOBX"]:\n    get_quote(ticker=t)\nreturn 1'
    ran = run(source, tmp_path, caps=caps)
    assert ran.result.status is ExecStatus.LIMIT_EXCEEDED
    assert "the plan bounded it to 1" in ran.result.message
    assert caps.statistics().calls == 0
