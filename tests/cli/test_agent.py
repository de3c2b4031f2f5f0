"""``safeexec agent run``: one JSON object per task, then a summary; a table without --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.cli.app import app

FIXTURE = Path(__file__).resolve().parents[1] / "harness" / "fixture_suite"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["agent", "run", str(FIXTURE), *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_prints_one_object_per_task_then_a_summary(tmp_path: Path) -> None:
    code, out, _ = _run(
        "--format", "text", "--mode", "restricted", "--agent", "oracle",
        "--tasks", "calc-sum,notes-first", "--json", "--state-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 0, out
    *tasks, summary = [json.loads(line) for line in out.splitlines()]
    assert [t["task"] for t in tasks] == ["calc-sum", "notes-first"]
    fields = {
        "task", "format", "mode", "agent", "success", "end_reason", "turns", "actions",
        "invalid_actions", "tool_calls", "refusals", "unauthorized_effects", "time_s", "tokens",
    }  # fmt: skip
    for task in tasks:
        assert fields <= set(task) and task["success"] and task["agent"] == "oracle"
        assert task["turns"] == task["tool_calls"] + 1
    assert summary["summary"] is True and summary["succeeded"] == 2


def test_the_table_shows_failures_and_the_exit_code_says_so(tmp_path: Path) -> None:
    code, out, _ = _run(
        "--format", "json", "--mode", "restricted", "--agent", "adversarial",
        "--tasks", "calc-sum", "--state-dir", str(tmp_path),
    )  # fmt: skip
    assert code == 1
    assert "calc-sum" in out and "malformed_call" in out and "0/1 succeeded" in out


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _run("--agent", "nobody", "--state-dir", str(tmp_path))
    assert code == 2 and "agent 'nobody'" in err
    code, _, err = _run("--tasks", "nope", "--state-dir", str(tmp_path))
    assert code == 2 and "nope" in err


def test_without_state_dir_the_state_goes_where_every_command_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    code, out, _ = _run(
        "--format", "text", "--mode", "restricted", "--agent", "oracle", "--tasks", "calc-sum",
        "--json",
    )  # fmt: skip
    assert code == 0, out
    assert list(project.iterdir()) == []  # nothing written where the command ran
    state = tmp_path / "xdg" / "safeexec"
    assert (state / "audit.jsonl").is_file() and (state / "turns.jsonl").is_file()
