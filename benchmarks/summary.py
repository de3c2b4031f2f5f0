"""Run every benchmark, then print one table: figure, safeexec, peer, ratio, target, met/missed.

Each ``bench_*.py`` runs as its own process (its tables print as it goes) and hands its headline
figures over through :mod:`figures`; the static gate's and the dsl mode's benchmarks are read
through their measuring functions when they record no figures of their own. ``--readme`` writes
the table between a page's summary markers (``make bench`` writes ``docs/benchmarks.md``).
``--beside PYTHON`` runs the native benchmark again under another interpreter (``make bench``: the
3.13 venv) and prints its idle memory, session open and opens/s beside this Python's.

Run: ``.venv/bin/python benchmarks/summary.py [--readme docs/benchmarks.md] [--only NAME ...]
[--beside .venv-3.13/bin/python]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from figures import FIGURES_ENV, Figure, format_ratio, format_value

HERE = Path(__file__).resolve().parent
START = "<!-- bench-summary:start -->"
END = "<!-- bench-summary:end -->"


def _check_figures() -> list[Figure]:
    """``check`` against bandit in-process (bench_check's measurements), and a re-check of code
    already checked, which the gate's cache answers (bench_check proves each was a hit)."""
    import bench_check

    from safeexec.policy.loader import load_policy

    policy = load_policy("default")
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench_check.measure(lines, policy, Path(tmp)) for lines in (60, 600)]
    for row in rows:
        assert row.bandit is not None, "bandit is part of the bench extra"
        figures.append(
            Figure(
                figure=f"`check` of {row.lines} lines",
                peer_name="bandit in-process",
                safeexec=row.check,
                peer=row.bandit,
                unit="s",
                bound="at_most",
                limit=1.0,
            )
        )
    figures.append(
        Figure(
            figure="`check` of 60 lines again (same code, same policy)",
            peer_name="bandit in-process",
            safeexec=rows[0].recheck,
            peer=rows[0].bandit,
            unit="s",
            bound="at_most",
            limit=bench_check.RECHECK_TARGET,
        )
    )
    return figures


def _dsl_figures() -> list[Figure]:
    import bench_dsl

    compiled = bench_dsl.plan_and_compile()
    with tempfile.TemporaryDirectory() as tmp:
        runs = bench_dsl.run_times(Path(tmp))
    return [
        Figure(
            figure="dsl plan + compile, cold (median over the examples)",
            peer_name="`ast.parse` of the same pipeline as Python",
            safeexec=statistics.median(r.cold_ast[1] for r in compiled),
            peer=statistics.median(r.base[1] for r in compiled),
            unit="s",
            bound="at_most",
            limit=2.0,
        ),
        Figure(
            figure="floor of any dsl front end: parse, one bare pass, build the output",
            peer_name="`ast.parse` of the same pipeline as Python",
            safeexec=statistics.median(r.floor[1] for r in compiled),
            peer=statistics.median(r.base[1] for r in compiled),
            unit="s",
        ),
        Figure(
            figure="dsl run, warm (median over the examples)",
            peer_name="the same pipeline in restricted Python",
            safeexec=statistics.median(r.dsl[1] for r in runs),
            peer=statistics.median(r.restricted[1] for r in runs),
            unit="s",
            bound="at_most",
            limit=1.5,
        ),
    ]


# The figures printed beside another Python's (issue 30: 3.12+'s immortal objects were what the
# idle-memory and open-rate targets were said to need), and the benchmark that measures them.
BESIDE_BENCH = "bench_native"
BESIDE_FIGURES = (
    "idle session private memory (USS)",
    "session open (warm pool), median",
    "sustained opens/s, 1 client(s)",
    "sustained opens/s, 8 client(s)",
)

# Benchmarks owned elsewhere that print but do not record: read through their functions.
ADAPTERS: dict[str, Callable[[], list[Figure]]] = {
    "bench_check": _check_figures,
    "bench_dsl": _dsl_figures,
}


def _run_benchmarks(python: str, names: list[str]) -> tuple[list[Figure], list[str]]:
    """Run each benchmark under ``python``; the figures they recorded, and those that failed."""
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-summary-") as tmp:
        path = Path(tmp) / "figures.jsonl"
        path.touch()
        env = {**os.environ, FIGURES_ENV: str(path)}
        for name in names:
            print(f"\n===== {name} ({python}) =====", flush=True)
            done = subprocess.run([python, str(HERE / f"{name}.py")], env=env, check=False)
            if done.returncode != 0:
                failed.append(name)
        lines = path.read_text(encoding="utf-8").splitlines()
    return [Figure.from_json(json.loads(line)) for line in lines], failed


def run_all(only: list[str]) -> tuple[list[Figure], list[str]]:
    """Run the benchmarks; the figures they recorded, and the names of any that failed."""
    names = sorted(p.stem for p in HERE.glob("bench_*.py"))
    if only:
        names = [n for n in names if n in only]
    figures, failed = _run_benchmarks(sys.executable, names)
    recorded = {f.source for f in figures}
    for name, adapter in ADAPTERS.items():
        if name in names and name not in recorded and name not in failed:
            print(f"\n===== {name}: figures for the summary =====", flush=True)
            figures += [_with_source(f, name) for f in adapter()]
    return figures, failed


def _with_source(figure: Figure, source: str) -> Figure:
    return Figure.from_json({**figure.to_json(), "source": source})


def render(figures: list[Figure]) -> str:
    """The summary as a Markdown table, ratios safeexec/peer (lower is better, except for
    rates and counts, whose targets say >=)."""
    rows = [
        "| figure | safeexec | peer | ratio | target | |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f in figures:
        verdict = {None: "", True: "met", False: "**missed**"}[f.met]
        rows.append(
            f"| {f.figure} | {format_value(f.safeexec, f.unit)} | {f.peer_name}: "
            f"{format_value(f.peer, f.unit)} | {format_ratio(f.ratio)} | {f.target} | {verdict} |"
        )
    met = sum(1 for f in figures if f.met is True)
    targets = sum(1 for f in figures if f.met is not None)
    load = os.getloadavg()[1]  # absolute figures (ms, MiB) move with it; same-run ratios less
    header = (
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs (load average {load:.1f} "
        f"over the last 5 minutes), one run of `make bench` ({time.strftime('%Y-%m-%d')}); "
        f"medians unless marked; {met} of {targets} targets met."
    )
    return header + "\n\n" + "\n".join(rows) + "\n"


def run_beside(python: str) -> tuple[str, list[Figure]]:
    """The version of ``python`` and the figures :data:`BESIDE_BENCH` recorded under it."""
    version = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    figures, failed = _run_benchmarks(python, [BESIDE_BENCH])
    if failed:
        raise SystemExit(f"{BESIDE_BENCH} failed under {python} (Python {version})")
    return version, figures


def render_beside(here: list[Figure], version: str, there: list[Figure]) -> str:
    """:data:`BESIDE_FIGURES` measured on this Python and on Python ``version``, side by side."""
    mine = {f.figure: f for f in here if f.source == BESIDE_BENCH}
    theirs = {f.figure: f for f in there}
    rows = [
        f"| figure | Python {platform.python_version()} | Python {version} | "
        f"{version} / {platform.python_version()} |",
        "| --- | --- | --- | --- |",
    ]
    for name in BESIDE_FIGURES:
        a, b = mine.get(name), theirs.get(name)
        unit = a.unit if a else b.unit if b else ""
        ratio = b.safeexec / a.safeexec if a and b and a.safeexec else None
        rows.append(
            f"| {name} | {format_value(a.safeexec if a else None, unit)} | "
            f"{format_value(b.safeexec if b else None, unit)} | {format_ratio(ratio)} |"
        )
    return "\n".join(rows) + "\n"


def write_readme(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no {START} ... {END} markers to write the summary between")
    path.write_text(pattern.sub(lambda _m: f"{START}\n{table}{END}", text), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--readme", type=Path, help="write the table into this page")
    parser.add_argument("--only", nargs="*", default=[], help="benchmark names (bench_native ...)")
    parser.add_argument("--beside", help="another Python to run the native benchmark under")
    args = parser.parse_args()
    figures, failed = run_all(args.only)
    table = render(figures)
    if args.beside is not None and not failed:
        version, there = run_beside(args.beside)
        table += f"\nBeside Python {version} ({BESIDE_BENCH}):\n\n"
        table += render_beside(figures, version, there)
    print("\n===== summary =====\n" + table)
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}")
        return 1
    if args.readme is not None:
        write_readme(args.readme, table)
        print(f"written into {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
