"""Cost of extract + parse (libcst + ast + checks) against ``ast.parse`` alone, in the same run.

Generates realistic agent actions of about 60 and 600 lines (data loading, helpers, loops,
comprehensions, f-strings, try/except), wraps each in a model reply with prose around a fenced
block, and reports the median time of each stage and its ratio to ``ast.parse`` of the same code.

Run: ``.venv/bin/python benchmarks/bench_pipeline.py``
"""

from __future__ import annotations

import ast
import importlib.metadata
import statistics
import sys
import time
from collections.abc import Callable

import libcst

from safeexec.extract import combine, extract
from safeexec.model.values import Action
from safeexec.parse import Parsed, parse

_BLOCK = '''
@dataclass(frozen=True)
class Reading{n}:
    station: str
    celsius: float
    taken_at: str


def load_readings_{n}(path: str, *, limit: int = 1000) -> list[Reading{n}]:
    """Read up to ``limit`` rows of the CSV at ``path``."""
    rows: list[Reading{n}] = []
    with open(path, encoding="utf-8") as handle:
        for index, line in enumerate(csv.reader(handle)):
            if index == 0 or not line:
                continue
            try:
                rows.append(Reading{n}(line[0], float(line[1]), line[2]))
            except (ValueError, IndexError) as exc:
                print(f"skipping row {{index}}: {{exc!r}}")
            if len(rows) >= limit:
                break
    return rows


def summarise_{n}(rows: list[Reading{n}]) -> dict[str, float]:
    by_station: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_station[row.station].append(row.celsius)
    return {{
        name: round(statistics.mean(values), 2) for name, values in by_station.items() if values
    }}

'''

_HEADER = """import csv
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass

"""

_FOOTER = """
summary = summarise_0(load_readings_0("data/readings.csv"))
print(json.dumps(summary, indent=2, sort_keys=True))
"""


def make_action_source(lines: int) -> str:
    """A realistic action of about ``lines`` lines (the header, N helper blocks, a footer)."""
    block_lines = _BLOCK.count("\n")
    blocks = max(1, round((lines - _HEADER.count("\n") - _FOOTER.count("\n")) / block_lines))
    return _HEADER + "".join(_BLOCK.format(n=n) for n in range(blocks)) + _FOOTER


def make_reply(code: str) -> str:
    return (
        "I'll load the readings, average them per station and print the result.\n\n"
        f"```python\n{code}```\n\nThis prints one mean temperature per station."
    )


def interleaved_medians_ms(
    stages: list[tuple[str, Callable[[], object]]], *, repeats: int
) -> list[float]:
    """Median ms per stage; the stages take turns in every round, so load hits them alike."""
    loops = []
    for _, function in stages:
        start = time.perf_counter()
        function()
        once = max(time.perf_counter() - start, 1e-6)
        loops.append(max(1, int(0.02 / once)))  # each sample lasts about 20 ms
    samples: list[list[float]] = [[] for _ in stages]
    for _ in range(repeats):
        for index, (_, function) in enumerate(stages):
            start = time.perf_counter()
            for _ in range(loops[index]):
                function()
            samples[index].append((time.perf_counter() - start) / loops[index])
    return [statistics.median(times) * 1000 for times in samples]


def extract_and_parse(reply: str) -> Parsed:
    action = combine(extract(reply))
    assert action is not None
    result = parse(action)
    assert isinstance(result, Parsed), result
    return result


def bench(lines: int) -> None:
    """Print one table section: every stage for an action of about ``lines`` lines."""
    code = make_action_source(lines)
    reply = make_reply(code)
    action = Action.create(code)
    assert isinstance(parse(action), Parsed)
    real_lines = code.count("\n")
    stages: list[tuple[str, Callable[[], object]]] = [
        ("ast.parse (baseline)", lambda: ast.parse(code)),
        ("extract + combine", lambda: combine(extract(reply))),
        ("libcst.parse_module alone", lambda: libcst.parse_module(code)),
        ("parse (libcst + ast + checks)", lambda: parse(action)),
        ("extract + parse", lambda: extract_and_parse(reply)),
    ]
    medians = interleaved_medians_ms(stages, repeats=31 if lines <= 100 else 15)
    for (name, _), ms in zip(stages, medians, strict=True):
        print(f"{real_lines:>6} L {name:<30} {ms:>10.3f} {ms / medians[0]:>11.1f}x")
    print()


def main() -> None:
    print(f"Python {sys.version.split()[0]}, libcst {importlib.metadata.version('libcst')}")
    header = f"{'action':>8} {'stage':<30} {'median ms':>10} {'x ast.parse':>12}"
    print(header)
    print("-" * len(header))
    for lines in (60, 600):
        bench(lines)


if __name__ == "__main__":
    main()
