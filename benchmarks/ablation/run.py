"""Run matrix cells: one cell in a fresh session (:func:`run_cell`), many over local worker
processes or Ray tasks (:func:`run_cells`). Each worker process (or Ray worker) owns its own
safeexec sessions; a worker keeps the suite and the reference traces it has recorded. Every cell
runs under the same :class:`Budgets`, whatever its format.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks.ablation.faults import GenericFeedback, fault_target, faulty_suite
from benchmarks.ablation.matrix import Cell
from benchmarks.ablation.suite.tools import TRANSFORMS
from safeexec.harness import (
    RunOptions,
    Suite,
    Task,
    answer_checks,
    load_suite,
    make_agent,
    reference_trace,
)
from safeexec.harness.agents import ReferenceTrace
from safeexec.harness.ledger import Submission, make_submit
from safeexec.harness.loop import run_task
from safeexec.harness.models import Model, RecordingModel, ReplayModel, Reply, ScriptedModel
from safeexec.model.codec import JSONValue

__all__ = [
    "EXECUTORS",
    "Budgets",
    "cell_task",
    "plain_exec_seconds",
    "ray_init_arguments",
    "reference_depth",
    "reference_reproduces",
    "run_cell",
    "run_cells",
    "session_start",
]

EXECUTORS = ("local", "ray")
SUITE_DIR = Path(__file__).resolve().parent / "suite"
# The ``benchmarks`` package: a Ray worker (on any node) gets it from the driver.
_BENCHMARKS = SUITE_DIR.parents[1]
# json/text calls go through the gateway; the session still needs a mode for its code steps.
_SESSION_MODE = {"gateway": "restricted", "gateway+transforms": "restricted"}
_WITH_TRANSFORMS = "gateway+transforms"


@dataclass(frozen=True, slots=True, kw_only=True)
class Budgets:
    """One run's budgets, the same for every format: completion tokens per reply, prompt and
    completion tokens per task, and the session's CPU seconds."""

    max_tokens: int = 512
    token_budget: int = 24_000
    cpu_seconds: float = 60.0

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "max_tokens": self.max_tokens,
            "token_budget": self.token_budget,
            "cpu_seconds": self.cpu_seconds,
        }


# Where a chunk runs: the suite, the scratch root, the recording directory, the budgets.
_Where = tuple[str, str, str | None, Budgets]


@functools.lru_cache(maxsize=4)
def _suite(path: str) -> Suite:
    return load_suite(_BENCHMARKS / path)


def _portable(suite_dir: Path) -> str:
    """``suite_dir`` relative to the ``benchmarks`` package when inside it (a worker resolves it
    against its own copy, which on a cluster node is not at the driver's path), else as is."""
    resolved = Path(suite_dir).resolve()
    inside = resolved.is_relative_to(_BENCHMARKS)
    return str(resolved.relative_to(_BENCHMARKS) if inside else resolved)


@functools.lru_cache(maxsize=1024)
def _trace(path: str, task_id: str, mode: str, seed: int, state_dir: str) -> ReferenceTrace:
    suite = _suite(path)
    task = _task(suite, task_id)
    return reference_trace(suite, task, RunOptions(mode=mode, seed=seed, state_dir=Path(state_dir)))


def _task(suite: Suite, task_id: str) -> Task:
    return next(t for t in suite.tasks if t.id == task_id)


def reference_reproduces(suite: Suite, task: Task, mode: str, state_dir: Path) -> bool:
    """Whether ``task``'s reference (``reference_dsl`` in the ``dsl`` mode) submits an answer
    that checks, run as one action in a fresh session of ``mode``."""
    trace = reference_trace(suite, task, RunOptions(mode=mode, state_dir=state_dir))
    return answer_checks(task, trace.answer)


def plain_exec_seconds(suite: Suite, task: Task, seed: int) -> float:
    """The reference program under plain ``exec`` with the raw tools: the no-safeexec baseline."""
    env = suite.make_environment(seed)
    box = Submission()
    names: dict[str, object] = {s.name: s.function for s in env.tools if s.name in task.tools}
    names["submit"] = make_submit(box).function
    code = compile(task.reference, f"<reference {task.id}>", "exec")
    started = time.perf_counter()
    exec(code, names)  # the suite's own trusted reference, timed as the baseline
    return time.perf_counter() - started


def session_start(mode: str, state_root: str, *, sessions: int = 3) -> dict[str, JSONValue]:
    """Median cold and warm ``print(1)`` steps over fresh sessions of ``mode`` (milliseconds),
    after one throwaway session (imports and grammar loads are paid once per process, not per
    session). The cold step includes the backend's start, which a task's first action pays."""
    from safeexec.session.session import Session

    program = "```dsl\nprint(1)\n```" if mode == "dsl" else "print(1)"
    cold, warm = [], []
    for _ in range(sessions + 1):
        state = Path(tempfile.mkdtemp(prefix="calibrate-", dir=state_root))
        with Session(mode=mode, state_dir=state) as session:
            times = []
            for _ in range(2):
                started = time.perf_counter()
                session.run(program)
                times.append((time.perf_counter() - started) * 1e3)
        cold.append(times[0])
        warm.append(times[1])
    return {
        "cold_ms": round(statistics.median(cold[1:]), 3),
        "warm_ms": round(statistics.median(warm[1:]), 3),
    }


def _model(
    cell: Cell, suite: Suite, task: Task, options: RunOptions, trace: ReferenceTrace | None
) -> Model:
    kind, _, rest = cell.model.partition(":")
    if not cell.model and cell.format == "dsl" and task.reference_dsl is None:
        return _inexpressible()
    if not cell.model:
        return make_agent(cell.agent, suite, task, options, trace=trace)
    if kind == "replay" and rest:
        return ReplayModel(Path(rest) / cell.variant)
    if kind == "openai" and rest:
        from safeexec.harness.openai_model import OpenAIModel

        return OpenAIModel(rest)
    raise ValueError(f"model={cell.model!r}: use replay:DIR or openai:MODEL")


def cell_task(suite: Suite, cell: Cell) -> Task:
    """The task ``cell`` runs: the suite's, with the transform tools added in the
    ``gateway+transforms`` mode."""
    task = _task(suite, cell.task)
    if cell.mode == _WITH_TRANSFORMS:
        return dataclasses.replace(task, tools=(*task.tools, *TRANSFORMS))
    return task


def _inexpressible() -> Model:
    """The scripted agent on a task the DSL cannot express: it says so, and the run fails (the
    DSL column counts the task rather than dropping it)."""
    reply = Reply(text="This task needs more than the DSL can express; I cannot write it.")
    return ScriptedModel(lambda _messages, _key, _rng: reply, name="oracle")


def run_cell(
    cell: Cell,
    suite_dir: str,
    state_root: str,
    record: str | None = None,
    budgets: Budgets = Budgets(),
) -> dict[str, JSONValue]:
    """Run one cell under ``budgets`` and return its row: the cell, the harness's task result,
    and fault facts. With ``record`` (a directory) every reply is recorded there for replay."""
    suite = _suite(suite_dir)
    task = cell_task(suite, cell)
    mode = _SESSION_MODE.get(cell.mode, cell.mode)
    state = Path(tempfile.mkdtemp(prefix="cell-", dir=state_root))
    options = RunOptions(
        format=cell.format,
        mode=mode,
        seed=cell.seed,
        state_dir=state,
        inject=cell.condition == "injection",
        grants=cell.grants,
        max_tokens=budgets.max_tokens,
        token_budget=budgets.token_budget,
        cpu_seconds=budgets.cpu_seconds,
    )
    trace = None
    if cell.agent != "adversarial":
        trace_mode = "dsl" if cell.format == "dsl" else mode
        trace = _trace(suite_dir, task.id, trace_mode, cell.seed, str(Path(state_root) / "traces"))
    run_suite_, made = suite, None
    if cell.fault:
        assert trace is not None
        run_suite_, made = faulty_suite(
            suite, cell.fault, fault_target(task.reference, trace.calls)
        )
    model = _model(cell, suite, task, options, trace)
    if record is not None:
        model = RecordingModel(model, Path(record) / cell.variant)
    if cell.feedback == "generic":
        model = GenericFeedback(model)
    first_env = 0 if made is None else len(made)
    result = run_task(run_suite_, task, model, options)
    row: dict[str, JSONValue] = {**cell.to_json(), **result.to_json()}
    row.update(mode=cell.mode, agent=cell.agent, model=cell.model, model_name=result.agent)
    row.pop("session_id", None)
    row["fault_applied"] = bool(made and made[first_env].applied)
    row["reference_calls"] = None if trace is None else len(trace.calls)
    row["dsl_expressible"] = task.reference_dsl is not None
    row["plain_exec_s"] = (
        plain_exec_seconds(suite, task, cell.seed)
        if cell.condition == "clean" and cell.agent == "oracle" and cell.format == "code"
        else None
    )
    shutil.rmtree(state, ignore_errors=True)
    return row


def reference_depth(rows: Iterable[dict[str, JSONValue]]) -> dict[str, JSONValue]:
    """How many tool calls each task's reference makes (one count a task, from the rows that
    recorded its trace): the median, the range and the number of tasks."""
    calls: dict[str, int] = {}
    for row in rows:
        count = row.get("reference_calls")
        if isinstance(count, int) and row.get("condition") == "clean":
            calls.setdefault(str(row["task"]), count)
    values = sorted(calls.values())
    return {
        "tasks": len(values),
        "median_reference_calls": statistics.median(values) if values else None,
        "min": values[0] if values else None,
        "max": values[-1] if values else None,
    }


def _run_chunk(
    cells: Sequence[Cell], suite_dir: str, state_root: str, record: str | None, budgets: Budgets
) -> list[dict[str, JSONValue]]:
    # On another node of a cluster the driver's scratch directory does not exist yet.
    Path(state_root).mkdir(parents=True, exist_ok=True)
    return [run_cell(c, suite_dir, state_root, record, budgets) for c in cells]


def _chunks(cells: Sequence[Cell], size: int) -> list[list[Cell]]:
    # Cells of one task and mode together, so a worker records each reference trace once.
    ordered = sorted(cells, key=lambda c: (c.task, c.mode, c.key))
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def run_cells(
    cells: Sequence[Cell],
    *,
    executor: str = "local",
    workers: int = 2,
    suite_dir: Path = SUITE_DIR,
    chunk: int = 8,
    record: Path | None = None,
    progress: Callable[[int], None] | None = None,
    address: str | None = None,
    budgets: Budgets = Budgets(),
) -> list[dict[str, JSONValue]]:
    """Every cell's row under ``budgets``, in matrix order, from ``workers`` local processes or
    Ray tasks (``record``: a directory to record every reply in, one file per kind of run;
    ``address``: the Ray cluster to connect to, else ``RAY_ADDRESS``, else a local one of
    ``workers``)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor={executor!r} must be one of {EXECUTORS}")
    chunks = _chunks(cells, chunk)
    state_root = tempfile.mkdtemp(prefix="safeexec-ablation-")
    recorded = None if record is None else str(Path(record).absolute())
    where: _Where = (_portable(suite_dir), state_root, recorded, budgets)
    try:
        if executor == "ray":
            rows = _on_ray(chunks, where, workers, progress, address)
        else:
            rows = _on_processes(chunks, where, workers, progress)
    finally:
        shutil.rmtree(state_root, ignore_errors=True)
    order = {c.key: i for i, c in enumerate(cells)}
    return sorted(rows, key=lambda r: order[Cell(**_cell_fields(r)).key])


def _cell_fields(row: dict[str, JSONValue]) -> dict[str, Any]:
    return {f.name: row[f.name] for f in dataclasses.fields(Cell)}


def _on_processes(
    chunks: Iterable[list[Cell]],
    where: _Where,
    workers: int,
    progress: Callable[[int], None] | None,
) -> list[dict[str, JSONValue]]:
    rows: list[dict[str, JSONValue]] = []
    # spawn: a worker starts clean (no inherited threads or sessions), then owns its sessions.
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_run_chunk, c, *where) for c in chunks]
        for future in as_completed(futures):
            done = future.result()
            rows += done
            if progress is not None:
                progress(len(done))
    return rows


def ray_init_arguments(address: str | None, workers: int) -> dict[str, Any]:
    """``ray.init``'s arguments for the fan-out.

    With a cluster (``address``, else ``RAY_ADDRESS``) the driver connects and passes no
    resource arguments: a connected driver may not (the nodes declare their CPUs when they
    start), and Ray raises ``ValueError`` if it does. Without one, a local cluster of
    ``workers`` CPUs starts here. Either way the workers get this checkout's ``benchmarks``
    package (and so the suite) through the runtime environment; ``safeexec`` itself must be
    installed on every node.
    """
    address = address or os.environ.get("RAY_ADDRESS") or None
    runtime_env = {"py_modules": [str(_BENCHMARKS)]}
    common: dict[str, Any] = {"runtime_env": runtime_env, "log_to_driver": False}
    if address is not None:
        return {"address": address, **common}
    return {"num_cpus": workers, "include_dashboard": False, **common}


def _on_ray(
    chunks: Iterable[list[Cell]],
    where: _Where,
    workers: int,
    progress: Callable[[int], None] | None,
    address: str | None,
) -> list[dict[str, JSONValue]]:
    try:
        import ray
    except ImportError as exc:
        raise SystemExit(
            "the ray executor needs the `ray` extra: pip install 'safeexec[ray]'"
        ) from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(**ray_init_arguments(address, workers))
    try:
        remote = ray.remote(num_cpus=1)(_run_chunk)
        pending = [remote.remote(c, *where) for c in chunks]
        rows: list[dict[str, JSONValue]] = []
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done = ray.get(ready[0])
            rows += done
            if progress is not None:
                progress(len(done))
        return rows
    finally:
        if started_here:
            ray.shutdown()
