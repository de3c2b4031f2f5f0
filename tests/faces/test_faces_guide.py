"""The faces guide's snippets (docs/guides/faces.md) run as written and print what their comments
say."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from smolagents.models import ChatMessage, MessageRole, Model

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "faces.md"


def _blocks(language: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Faces:") :]
    return re.findall(rf"^```{language}\n(.*?)^```$", section, re.S | re.M)


def _run(snippet: str, namespace: dict[str, Any] | None = None) -> list[str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet, str(PAGE), "exec"), dict(namespace or {}))  # our own docs
    return printed.getvalue().splitlines()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    # The stdio server is the installed `safeexec` command; its environment is the SDK's
    # default (HOME, PATH, ...), so HOME decides where its audit log goes.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def test_the_faces_section_has_one_snippet_per_face() -> None:
    assert len(_blocks("python")) == 4


def test_the_mcp_snippet_runs(tmp_path: Path) -> None:
    assert _run(_blocks("python")[0]) == ["42"]
    assert (tmp_path / ".local" / "state" / "safeexec" / "audit.jsonl").is_file()


def test_the_model_api_snippet_runs() -> None:
    assert _run(_blocks("python")[1]) == ["45"]


class _Answers(Model):
    """A scripted smolagents model: one code action that answers."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")

    def generate(self, messages: list[Any], **kwargs: Any) -> ChatMessage:
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content="Thought: multiply.\n<code>\nfinal_answer(6 * 7)\n</code>",
        )


def test_the_smolagents_snippet_runs_under_the_shipped_default_pack() -> None:
    lines = _run(_blocks("python")[2], {"model": _Answers()})
    assert lines[-1] == "42"


def test_the_langchain_snippet_runs() -> None:
    assert _run(_blocks("python")[3]) == ["42"]
