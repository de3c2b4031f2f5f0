"""``check`` and ``run`` read every input the same way and agree on what may run."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.cli.app import app

# name → (contents, what both must say: "allowed" | "denied" | "usage")
CORPUS: dict[str, tuple[bytes, str]] = {
    "fenced.md": (b"Sure:\n```python\nprint(1 + 1)\n```\n", "allowed"),
    "fenced_denied.md": (b"```python\neval('1')\n```\n", "denied"),
    "raw.py": (b"x = 2\nprint(x)\n", "allowed"),
    "tool_call.json": (
        b'{"type": "function", "function": {"name": "python", '
        b'"arguments": "{\\"code\\": \\"print(3)\\"}"}}',
        "allowed",
    ),
    "empty.md": (b"", "denied"),
    "prose_only.md": (b"I cannot help with that.\n", "denied"),
    "latin1.py": ("print('café')\n".encode("latin-1"), "usage"),
}


def _verdict(command: str, exit_code: int) -> str:
    if exit_code == 2:
        return "usage"
    if command == "check":
        return {0: "allowed", 3: "denied"}.get(exit_code, f"exit {exit_code}")
    return {0: "allowed", 1: "allowed", 4: "allowed", 3: "denied"}.get(
        exit_code, f"exit {exit_code}"
    )


def _invoke(command: str, tmp_path: Path, *args: str, stdin: bytes | None = None) -> int:
    extra = ["--state-dir", str(tmp_path / "state")] if command == "run" else []
    done = CliRunner().invoke(app, [command, *extra, *args], input=stdin)
    return done.exit_code


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_check_and_run_agree_on_every_input_from_a_file_and_from_stdin(
    name: str, tmp_path: Path
) -> None:
    data, expected = CORPUS[name]
    path = tmp_path / name
    path.write_bytes(data)
    seen = {
        (command, source): _verdict(command, code)
        for command in ("check", "run")
        for source, code in (
            ("file", _invoke(command, tmp_path, str(path))),
            ("stdin", _invoke(command, tmp_path, "-", stdin=data)),
        )
    }
    assert set(seen.values()) == {expected}, seen


def test_a_directory_is_the_same_usage_error_for_both(tmp_path: Path) -> None:
    for command in ("check", "run"):
        done = CliRunner().invoke(app, [command, str(tmp_path)])
        assert done.exit_code == 2
        assert "is a directory" in done.output
