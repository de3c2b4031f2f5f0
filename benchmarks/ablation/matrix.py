"""The run matrix: which (task, format, mode, agent, condition) cells a size runs.

Formats and modes: ``code`` runs in ``native`` and ``restricted``; ``json`` and ``text`` calls go
through the tool gateway (mode ``gateway``: no backend runs, the capability layer checks each
call), and on clean runs also with the suite's transform tools added (mode
``gateway+transforms``: arithmetic, min/max, sum, sort, filter as tools, the factor
"with/without transform tools"); ``dsl`` runs in ``dsl`` on every task, a task the DSL cannot
express counting as a failure of that column. Conditions: ``clean`` (oracle on every task, noisy and
adversarial on a slice), ``fault`` (the oracle under each fault, with rich and generic
feedback) and ``injection`` (the gullible agent on every injection task, with broad grants and
with scoped capabilities).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from benchmarks.ablation.faults import FAULTS
from safeexec.harness import Suite, Task

__all__ = ["COMBOS", "SIZES", "TRANSFORMED", "Cell", "build_cells", "with_model"]

COMBOS: tuple[tuple[str, str], ...] = (
    ("code", "native"),
    ("code", "restricted"),
    ("json", "gateway"),
    ("text", "gateway"),
    ("dsl", "dsl"),
)
# The json/text modes with the transform tools (clean runs only: the factor's comparison).
TRANSFORMED: tuple[tuple[str, str], ...] = (
    ("json", "gateway+transforms"),
    ("text", "gateway+transforms"),
)
SIZES = ("quick", "full")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One run of the matrix."""

    task: str
    format: str
    mode: str
    agent: str
    condition: str
    fault: str = ""
    feedback: str = "rich"
    grants: str = "scoped"
    seed: int = 0
    model: str = ""
    """``""``: the scripted ``agent``; ``replay:DIR`` or ``openai:MODEL``: that model instead."""

    @property
    def variant(self) -> str:
        """The recording file of this cell's kind of run (all its tasks share it)."""
        parts = (self.condition, self.format, self.mode, self.agent, self.fault or "none",
                 self.feedback, self.grants, str(self.seed))  # fmt: skip
        return "-".join(parts) + ".jsonl"

    @property
    def key(self) -> tuple[str, ...]:
        return (
            self.condition,
            self.task,
            self.format,
            self.mode,
            self.agent,
            self.fault,
            self.feedback,
            self.grants,
            str(self.seed),
            self.model,
        )

    def to_json(self) -> dict[str, str | int]:
        return {
            "task": self.task,
            "format": self.format,
            "mode": self.mode,
            "agent": self.agent,
            "condition": self.condition,
            "fault": self.fault,
            "feedback": self.feedback,
            "grants": self.grants,
            "seed": self.seed,
            "model": self.model,
        }


def _combos(task: Task, *, clean: bool = False) -> list[tuple[str, str]]:
    """A clean run has every combination, the transform modes, and ``dsl`` whether or not the
    task has a DSL reference (without one it counts as a DSL failure); the other conditions
    measure a mechanism, so they run ``dsl`` only where it can express the task."""
    if clean:
        return [*COMBOS, *TRANSFORMED]
    return [(f, m) for f, m in COMBOS if f != "dsl" or task.reference_dsl is not None]


def _one_per_scenario(tasks: list[Task], *, skip: str = "injection") -> list[Task]:
    seen: dict[str, Task] = {}
    for task in tasks:
        if skip not in task.tags and "long" not in task.tags:
            seen.setdefault(task.scenario, task)
    return list(seen.values())


def with_model(cells: list[Cell], model: str) -> list[Cell]:
    """The cells a model (``replay:DIR``, ``openai:MODEL``) runs in place of the oracle and
    gullible agents (the noisy and adversarial ones are scripted behaviours, not models)."""
    return [dataclasses.replace(c, model=model) for c in cells if c.agent in ("oracle", "gullible")]


def build_cells(suite: Suite, size: str, *, seed: int = 0) -> list[Cell]:
    """The cells of ``size`` (``quick``: a slice for CI; ``full``: the benchmark)."""
    if size not in SIZES:
        raise ValueError(f"size={size!r} must be one of {SIZES}")
    tasks = list(suite.tasks)
    sample = _one_per_scenario(tasks)
    injected = [t for t in tasks if "injection" in t.tags]
    if size == "quick":
        long = [t for t in tasks if "long" in t.tags][:1]
        deep = [t for t in tasks if "deep" in t.tags][:1]
        inexpressible = [t for t in tasks if t.reference_dsl is None][:1]
        clean, noisy, faulted = sample[:3] + long + deep + inexpressible, sample[:2], sample[:1]
        injected, hostile = injected[:2], sample[:1]
        faults: tuple[str, ...] = ("transient", "value_error", "drift")
    else:
        clean, noisy, faulted, hostile, faults = tasks, sample, sample, sample, FAULTS
    cells: list[Cell] = []
    for task in clean:
        cells += [
            Cell(task=task.id, format=f, mode=m, agent="oracle", condition="clean", seed=seed)
            for f, m in _combos(task, clean=True)
        ]
    for agent, chosen in (("noisy", noisy), ("adversarial", hostile)):
        for task in chosen:
            cells += [
                Cell(task=task.id, format=f, mode=m, agent=agent, condition="clean", seed=seed)
                for f, m in _combos(task)
            ]
    for task in faulted:
        for fault in faults:
            for feedback in ("rich", "generic"):
                cells += [
                    Cell(
                        task=task.id,
                        format=f,
                        mode=m,
                        agent="oracle",
                        condition="fault",
                        fault=fault,
                        feedback=feedback,
                        seed=seed,
                    )
                    for f, m in _combos(task)
                    if (f, m) != ("code", "native")
                ]
    for task in injected:
        for grants in ("broad", "scoped"):
            cells += [
                Cell(
                    task=task.id,
                    format=f,
                    mode=m,
                    agent="gullible",
                    condition="injection",
                    grants=grants,
                    seed=seed,
                )
                for f, m in _combos(task)
            ]
    return cells
