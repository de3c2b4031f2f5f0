"""The getting-started page's examples run as written and print what their comments say.

The README's ten-line example is the page's Python API example, word for word.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TUTORIAL = ROOT / "docs" / "tutorial.md"


def _first_block(page: Path, heading: str) -> str:
    """The first ```python block after ``heading`` on ``page``."""
    text = page.read_text(encoding="utf-8")
    match = re.search(r"^```python\n(.*?)^```$", text[text.index(heading) :], re.S | re.M)
    assert match is not None
    return match.group(1)


def test_the_readme_example_is_the_getting_started_example() -> None:
    assert _first_block(README, "## Example") == _first_block(TUTORIAL, "## Python API")


def test_the_python_api_example_runs_and_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = _first_block(TUTORIAL, "## Python API")
    assert len(example.splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, str(TUTORIAL), "exec"), {})  # our own documentation, not model code
    lines = printed.getvalue().splitlines()
    assert lines[0] == "allow ok"
    assert "285" in printed.getvalue()
    assert "['SX201', 'SX202']" in lines
    assert lines[-1] == "497 3"
    assert (tmp_path / "xdg" / "safeexec" / "audit.jsonl").is_file()
    assert not (tmp_path / ".safeexec").exists()


def test_the_session_walkthrough_runs_and_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walkthrough = _first_block(TUTORIAL, "## Session walkthrough")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(walkthrough, str(TUTORIAL), "exec"), {})  # our own documentation
    assert printed.getvalue().splitlines() == [
        "step 0",
        "step 1",
        "step 2",
        "south    5",
        "KeyError 'east'",
        "True True",
        "timeout False",
        "['region,amount', 'north,7', 'south,5']",
        "7 steps in 1 sessions; chain verified (7 events)",
    ]
    events = (tmp_path / "xdg" / "safeexec" / "audit.jsonl").read_text().splitlines()
    assert len(events) == 7  # one per step, the interrupted one included
