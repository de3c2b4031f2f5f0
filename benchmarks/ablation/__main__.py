"""``python -m benchmarks.ablation``: run the matrix, print the table, write results and charts.

Options: ``--size quick|full`` (default full), ``--executor local|ray``, ``--workers N``,
``--address HOST:PORT`` (a Ray cluster's head; default ``RAY_ADDRESS``),
``--out DIR`` (default ``ablation-results``), ``--no-charts``, ``--record DIR``, and
``--agent openai:MODEL`` (the matrix against an endpoint, every reply recorded under
``DIR/recordings``) or ``--agent replay:DIR`` (a recording, offline).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.ablation.matrix import SIZES, build_cells, with_model
from benchmarks.ablation.report import aggregate, charts, markdown
from benchmarks.ablation.run import (
    EXECUTORS,
    SUITE_DIR,
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
    args = parser.parse_args(argv)
    suite = load_suite(SUITE_DIR)
    cells = build_cells(suite, args.size, seed=args.seed)
    record = args.record
    if args.agent != "scripted":
        cells = with_model(cells, args.agent)
        if args.agent.startswith("openai:") and record is None:
            record = args.out / "recordings"
    done = [0]
    started = time.perf_counter()

    def progress(n: int) -> None:
        done[0] += n
        width = 40
        filled = width * done[0] // len(cells)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done[0]}/{len(cells)} runs")
        sys.stderr.flush()

    with tempfile.TemporaryDirectory() as scratch:
        calibration: dict[str, JSONValue] = {
            mode: session_start(mode, scratch) for mode in ("native", "restricted", "dsl")
        }
    rows = run_cells(
        cells,
        executor=args.executor,
        workers=args.workers,
        record=record,
        progress=progress,
        address=args.address,
    )
    sys.stderr.write("\n")
    summary = aggregate(rows, suite, calibration)
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
