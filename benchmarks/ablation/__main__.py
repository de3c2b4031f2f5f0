"""``python -m benchmarks.ablation``: run the matrix, print the table, write results and charts.

Options: ``--size quick|full`` (default full), ``--executor local|ray``, ``--workers N``,
``--address HOST:PORT`` (a Ray cluster's head; default ``RAY_ADDRESS``),
``--out DIR`` (default ``ablation-results``), ``--no-charts``, ``--record DIR``, and
``--agent openai:MODEL`` (the matrix against the OpenAI-compatible endpoint at
``OPENAI_BASE_URL``, every reply recorded under ``DIR/recordings``) or ``--agent replay:DIR``
(a recording, offline). ``--tasks`` and ``--conditions`` narrow the matrix; ``--max-tokens``,
``--token-budget`` and ``--cpu-seconds`` set the budgets every run gets, whatever its format.
``results.json`` records them with the commit, package versions, environment, seeds and model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from benchmarks.ablation.matrix import SIZES, build_cells, with_model
from benchmarks.ablation.provenance import provenance
from benchmarks.ablation.report import aggregate, charts, markdown
from benchmarks.ablation.run import (
    EXECUTORS,
    SUITE_DIR,
    Budgets,
    reference_depth,
    run_cells,
    session_start,
)
from safeexec.harness import load_suite
from safeexec.model.codec import JSONValue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation", description=__doc__)
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--executor", choices=EXECUTORS, default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--address",
        help="with --executor ray: the cluster to connect to (host:port of its head; default "
        "RAY_ADDRESS, else a local cluster of --workers CPUs)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("ablation-results"))
    parser.add_argument("--no-charts", action="store_true")
    parser.add_argument(
        "--agent",
        default="scripted",
        help="scripted (default), openai:MODEL (an OpenAI-compatible endpoint, recorded) or "
        "replay:DIR (a recording made with --record or by an openai run)",
    )
    parser.add_argument("--record", type=Path, help="record every reply to this directory")
    parser.add_argument("--tasks", help="comma-separated task ids (default: the size's tasks)")
    parser.add_argument(
        "--conditions", help="comma-separated conditions: clean, fault, injection (default: all)"
    )
    defaults = Budgets()
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens)
    parser.add_argument("--token-budget", type=int, default=defaults.token_budget)
    parser.add_argument("--cpu-seconds", type=float, default=defaults.cpu_seconds)
    args = parser.parse_args(argv)
    budgets = Budgets(
        max_tokens=args.max_tokens, token_budget=args.token_budget, cpu_seconds=args.cpu_seconds
    )
    suite = load_suite(SUITE_DIR)
    cells = build_cells(suite, args.size, seed=args.seed)
    if args.tasks:
        chosen = set(args.tasks.split(","))
        unknown = chosen - {t.id for t in suite.tasks}
        if unknown:
            parser.error(f"--tasks: no such task(s) {sorted(unknown)}")
        cells = [c for c in cells if c.task in chosen]
    if args.conditions:
        cells = [c for c in cells if c.condition in set(args.conditions.split(","))]
    record = args.record
    if args.agent != "scripted":
        cells = with_model(cells, args.agent)
        if args.agent.startswith("openai:") and record is None:
            record = args.out / "recordings"
    if not cells:
        parser.error("no runs: --tasks and --conditions left none of the matrix")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        calibration: dict[str, JSONValue] = {
            mode: session_start(mode, scratch) for mode in ("native", "restricted", "dsl")
        }
    columns = (*Progress.get_default_columns()[:1], BarColumn(), MofNCompleteColumn())
    with Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True)) as bar:
        runs = bar.add_task("runs", total=len(cells))
        rows = run_cells(
            cells,
            executor=args.executor,
            workers=args.workers,
            record=record,
            progress=lambda n: bar.advance(runs, n),
            address=args.address,
            budgets=budgets,
        )
    summary = aggregate(rows, suite, calibration)
    summary["provenance"] = provenance(
        model=args.agent,
        seeds=[args.seed],
        budgets=budgets.to_json(),
        argv=["python", "-m", "benchmarks.ablation", *(sys.argv[1:] if argv is None else argv)],
    )
    summary["wall_s"] = round(time.perf_counter() - started, 1)
    summary["executor"] = args.executor
    summary["size"] = args.size
    depth = reference_depth(rows)
    summary["reference_depth"] = depth
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(
        json.dumps({"summary": summary, "runs": rows}, indent=1, sort_keys=True) + "\n"
    )
    table = markdown(summary)
    (args.out / "results.md").write_text(table)
    written = [] if args.no_charts else charts(summary, args.out)
    print(table)
    print(
        f"Median reference calls per task: {depth['median_reference_calls']} "
        f"(range {depth['min']}-{depth['max']}, {depth['tasks']} tasks); json/text run with and "
        "without transform tools (mode gateway+transforms); tasks the DSL cannot express count "
        "as failures of the dsl column."
    )
    print(
        f"{len(rows)} runs in {summary['wall_s']} s; wrote {args.out / 'results.json'}, "
        f"{args.out / 'results.md'} and {len(written)} charts"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
