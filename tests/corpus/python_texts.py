"""Every corpus of Python this repository holds, as texts by name: the differential tests' input.

Policy-pack cases, the model-style (policy-fit) corpus and each of its cells, the examples, the
escape tests' sources and the benchmark's programs. Shared by the parse cross-check's differential
(``tests/test_parse_cross_check.py``) and the gate's fast-path differential
(``tests/test_gate_fast_path.py``), so both hold the same texts to the same standard.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["python_corpus"]

ROOT = Path(__file__).resolve().parent.parent.parent
CORPORA = ("policies", "tests/corpus", "tests/escapes", "examples")
_CELL_MARK = "# %% "


def python_corpus() -> dict[str, str]:
    """Each file's text by its path, each ``# %% `` cell of it too, and bench_check's programs."""
    texts: dict[str, str] = {}
    for corpus in CORPORA:
        for path in sorted((ROOT / corpus).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            name = str(path.relative_to(ROOT))
            texts[name] = text
            cells = text.split(_CELL_MARK)
            if len(cells) > 1:
                texts.update({f"{name}#{n}": cell for n, cell in enumerate(cells)})
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    texts.update({f"bench_check-{n}": bench_check.program(n) for n in (60, 600)})
    return texts
