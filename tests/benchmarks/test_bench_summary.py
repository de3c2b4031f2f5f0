"""The benchmark summary: targets judged on the right side of the ratio, the benchmarks page
rewritten only between its markers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from figures import Figure
from summary import BESIDE_BENCH, END, START, render, render_beside, write_readme


def _figure(**changes: object) -> Figure:
    values: dict[str, object] = {
        "figure": "f",
        "peer_name": "p",
        "safeexec": 1.0,
        "peer": 4.0,
        "unit": "s",
    }
    values.update(changes)
    return Figure(**values)  # type: ignore[arg-type]


def test_an_upper_bound_on_the_ratio_is_met_below_and_missed_above() -> None:
    assert _figure(bound="at_most", limit=0.25).met is True
    assert _figure(bound="at_most", limit=0.2).met is False


def test_a_lower_bound_on_a_rate_is_met_above_and_missed_below() -> None:
    assert _figure(safeexec=40.0, peer=10.0, unit="/s", bound="at_least", limit=4).met is True
    assert _figure(safeexec=30.0, peer=10.0, unit="/s", bound="at_least", limit=4).met is False


def test_an_absolute_target_reads_safeexecs_own_value() -> None:
    absolute = _figure(safeexec=0.0005, peer=None, bound="at_most", limit=0.001, on="safeexec")
    assert absolute.ratio is None
    assert absolute.met is True
    over = _figure(safeexec=0.002, peer=None, bound="at_most", limit=0.001, on="safeexec")
    assert over.met is False


def test_a_figure_without_a_target_is_neither_met_nor_missed() -> None:
    assert _figure().met is None
    assert _figure().target == "-"


def test_the_table_marks_missed_targets_and_counts_them() -> None:
    table = render([_figure(bound="at_most", limit=0.1), _figure(bound="at_most", limit=1.0)])
    assert "**missed**" in table
    assert "1 of 2 targets met" in table


def test_the_readme_changes_only_between_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{START}\nold\n{END}\nafter\n", encoding="utf-8")
    write_readme(readme, "new table\n")
    assert readme.read_text(encoding="utf-8") == f"before\n{START}\nnew table\n{END}\nafter\n"


def test_a_readme_without_markers_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        write_readme(readme, "table\n")


def test_the_other_python_s_figures_sit_beside_this_one_s() -> None:
    here = [
        _figure(figure="idle session private memory (USS)", safeexec=1.5, unit="MiB"),
        _figure(figure="sustained opens/s, 1 client(s)", safeexec=400.0, unit="/s"),
        _figure(figure="warm round trip of `x = 1`", safeexec=0.0004),  # not a beside figure
    ]
    here = [Figure.from_json({**f.to_json(), "source": BESIDE_BENCH}) for f in here]
    there = [_figure(figure="idle session private memory (USS)", safeexec=1.2, unit="MiB")]
    table = render_beside(here, "3.13.0", there)
    assert "| Python 3.13.0 |" in table
    assert "| idle session private memory (USS) | 1.5 MiB | 1.2 MiB | 0.8x |" in table
    assert "| sustained opens/s, 1 client(s) | 400 /s | - | - |" in table  # not measured there
    assert "warm round trip" not in table


def test_the_page_make_bench_writes_has_the_markers(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    recipe = re.search(r"summary\.py --readme (\S+)", (root / "Makefile").read_text())
    assert recipe is not None
    page = tmp_path / "page.md"
    page.write_text((root / recipe.group(1)).read_text(encoding="utf-8"), encoding="utf-8")
    write_readme(page, "new table\n")
    assert f"{START}\nnew table\n{END}" in page.read_text(encoding="utf-8")
