"""Every ```python block of the documentation runs as written, unless marked otherwise.

The pages are ``README.md``, ``docs/**/*.md`` and the repository files the pages include by
snippet (``--8<-- "path"``). A block preceded by ``<!-- docs-test: tests/some_test.py (why) -->``
is run by that test instead (it needs a model, a server or fixtures); one preceded by
``<!-- docs-test: skip (why) -->`` is a sketch that cannot run. Every other block runs in a fresh
interpreter, in a scratch directory with its own state dir, under a time bound.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(
    r"^(?:<!-- docs-test: (?P<marker>[^\n]*?) -->\n)?```python\n(?P<code>.*?)^```$", re.S | re.M
)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"$', re.M)
MARKER = re.compile(r"^(?:skip|(?P<test>tests/\S+\.py)) \(.+\)$")
BOUND_SECONDS = 300


def pages() -> list[Path]:
    """The documentation's Markdown files, included repository files among them."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in list(found):
        for match in SNIPPET.finditer(page.read_text(encoding="utf-8")):
            found.append(ROOT / match.group("path"))
    return found


def blocks() -> list[tuple[str, int, str | None, str]]:
    """(page, block number, marker or None, code) for every ```python block of every page."""
    out = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for number, match in enumerate(BLOCK.finditer(text)):
            name = str(page.relative_to(ROOT))
            out.append((name, number, match.group("marker"), match.group("code")))
    return out


ALL = blocks()
RUNNABLE = [b for b in ALL if b[2] is None]


def test_the_pages_have_blocks_that_run() -> None:
    assert len(RUNNABLE) >= 6
    assert {b[0] for b in RUNNABLE} >= {"README.md", "docs/tutorial.md", "docs/guides/faces.md"}


@pytest.mark.parametrize(("page", "number", "marker"), [b[:3] for b in ALL if b[2] is not None])
def test_a_marked_block_names_a_real_test_or_says_why_it_is_a_sketch(
    page: str, number: int, marker: str
) -> None:
    match = MARKER.match(marker)
    assert match is not None, f"{page} block {number}: marker {marker!r} is not understood"
    if match.group("test"):
        assert (ROOT / match.group("test")).is_file()


@pytest.mark.parametrize(
    ("page", "number", "code"),
    [(b[0], b[1], b[3]) for b in RUNNABLE],
    ids=[f"{b[0]}#{b[1]}" for b in RUNNABLE],
)
def test_the_block_runs(page: str, number: int, code: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
        # The MCP snippet starts the installed `safeexec` command by name.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"{page} block {number} failed:\n{done.stderr[-3000:]}"
