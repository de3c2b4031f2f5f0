"""One row of the benchmark summary: safeexec beside a peer on the same work, in the same run.

Each ``bench_*.py`` prints its own tables and also hands its headline figures to :func:`record`;
when ``SAFEEXEC_BENCH_FIGURES`` names a file (``summary.py`` sets it) they are appended to it as
JSON lines, from which ``summary.py`` prints the table (figure, safeexec, peer, ratio, target,
met/missed) and writes it into the benchmarks page (``docs/benchmarks.md``).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

FIGURES_ENV = "SAFEEXEC_BENCH_FIGURES"

Bound = Literal["at_most", "at_least", "none"]
On = Literal["ratio", "safeexec"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """``safeexec`` and ``peer`` are in ``unit``; the target bounds ``on`` the ratio safeexec/peer
    or on safeexec's own value (an absolute target may have no peer: ``peer`` is ``None``)."""

    figure: str
    peer_name: str
    safeexec: float
    peer: float | None
    unit: str
    bound: Bound = "none"
    limit: float = 0.0
    on: On = "ratio"
    source: str = ""

    @property
    def ratio(self) -> float | None:
        return self.safeexec / self.peer if self.peer else None

    @property
    def target(self) -> str:
        if self.bound == "none":
            return "-"
        sign = "<=" if self.bound == "at_most" else ">="
        what = "x" if self.on == "ratio" else f" {self.unit}"
        return f"{sign} {self.limit:g}{what}"

    @property
    def met(self) -> bool | None:
        if self.bound == "none":
            return None
        value = self.ratio if self.on == "ratio" else self.safeexec
        if value is None:
            return False
        return value <= self.limit if self.bound == "at_most" else value >= self.limit

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Figure:
        return cls(**data)  # type: ignore[arg-type]


def record(figures: list[Figure], *, source: str) -> None:
    """Print ``figures`` as a small table and append them to the summary file, if one is set."""
    for item in figures:
        verdict = {None: "", True: "met", False: "MISSED"}[item.met]
        print(
            f"  = {item.figure}: safeexec {format_value(item.safeexec, item.unit)} vs "
            f"{item.peer_name} {format_value(item.peer, item.unit)}: {format_ratio(item.ratio)} "
            f"(target {item.target}) {verdict}"
        )
    path = os.environ.get(FIGURES_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        for item in figures:
            row = item.to_json()
            row["source"] = source
            fh.write(json.dumps(row) + "\n")


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        if value >= 1.0:
            return f"{value:.2f} s"
        return f"{value * 1e3:.3g} ms" if value >= 1e-3 else f"{value * 1e6:.3g} us"
    if unit == "/s" or value >= 100:
        return f"{value:.0f} {unit}"
    return f"{value:.3g} {unit}"


def format_ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.3g}x"


def interleaved_medians(
    work: dict[str, Callable[[], object]], *, repeat: int, warmup: bool = True
) -> dict[str, float]:
    """Median seconds of each piece of work, run round-robin so load changes hit all alike."""
    if warmup:
        for run in work.values():
            run()
    samples: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(repeat):
        for name, run in work.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}
