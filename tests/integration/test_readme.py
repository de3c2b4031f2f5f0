"""The README's Python API example runs as written (native backend, default policy)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_python_api_example_runs_and_prints_what_its_comments_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text()
    section = text[text.index("## Python API") :]
    match = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert match is not None
    example = match.group(1)
    assert len(example.splitlines()) <= 10
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(example, str(README), "exec"), {})  # our own documentation, not model code
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
    text = README.read_text()
    section = text[text.index("## Session walkthrough") :]
    match = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert match is not None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(match.group(1), str(README), "exec"), {})  # our own documentation
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
