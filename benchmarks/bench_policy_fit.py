"""False refusals of ordinary model code: pack × mode over our own model-style corpus.

Runs every snippet of ``tests/corpus/model_style`` (167 cells that each assert their own result)
through a real Session for each shipped pack and mode, and prints how many ran unchanged, how
many the gate refused (by rule), and how many the runtime stopped. The baseline, measured in the
same run, is the same corpus under ``strict`` in ``restricted`` mode (today's caution); every
row states its run count as a ratio against it. Usage: ``python benchmarks/bench_policy_fit.py
[--only PACK:MODE ...] [--list]`` (``--list`` also prints each refused snippet and why).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "corpus"))

from model_style_corpus import SnippetRun, load_corpus, run_snippets  # noqa: E402

BASELINE = ("strict", "restricted")
COMBINATIONS = [
    BASELINE,
    ("default", "native"),
    ("default", "restricted"),
    ("data-analysis", "native"),
    ("data-analysis", "restricted"),
]


def _measure(pack: str, mode: str) -> tuple[list[SnippetRun], float]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as root:
        runs = list(run_snippets(load_corpus(), pack=pack, mode=mode, workdir_root=Path(root)))
    return runs, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="PACK:MODE pairs to measure")
    parser.add_argument("--list", action="store_true", help="print every refused snippet")
    args = parser.parse_args(argv)
    combos = COMBINATIONS
    if args.only:
        combos = [BASELINE, *(tuple(item.split(":", 1)) for item in args.only)]
    results = {combo: _measure(*combo) for combo in dict.fromkeys(combos)}
    base_runs, _ = results[BASELINE]
    base_ran = sum(run.ran for run in base_runs) or 1
    header = (
        f"{'pack':<14}{'mode':<11}{'ran':>5}{'/':>2}{'all':<4}{'ran %':>7}{'refused':>9}"
        f"{'runtime':>9}{'x base':>8}{'sec':>7}  top refusing rules"
    )
    print(header)
    print("-" * len(header))
    for (pack, mode), (runs, seconds) in results.items():
        ran = sum(run.ran for run in runs)
        refused = [run for run in runs if run.verdict != "allow"]
        stopped = [run for run in runs if run.verdict == "allow" and not run.ran]
        rules = collections.Counter(rule for run in refused for rule in set(run.rules))
        top = ", ".join(f"{rule}×{count}" for rule, count in rules.most_common(4))
        print(
            f"{pack:<14}{mode:<11}{ran:>5}{'/':>2}{len(runs):<4}{100 * ran / len(runs):>6.1f}%"
            f"{len(refused):>9}{len(stopped):>9}{ran / base_ran:>8.2f}{seconds:>7.1f}  {top}"
        )
        if args.list:
            for run in refused + stopped:
                why = ",".join(sorted(set(run.rules))) or run.detail
                print(f"    {run.id:<42} {run.verdict:<6} {why[:90]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
