"""The contract every command keeps (``safeexec.cli.groups.finish``): one line on stderr for a
usage or configuration error, never a traceback, quiet on a closed pipe, plain help, and exit
statuses that are the documented ones. Every error path run in a fresh process, many times and
in parallel, is ``tests/integration/test_cli_contract.py``."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.cli.groups import EXIT_INTERNAL, EXIT_USAGE, TRACEBACK_ENV, finish, in_words
from safeexec.errors import ConfigurationError
from tests.cli.error_paths import (
    ERROR_PATHS,
    OUTCOME_PATHS,
    SAFEEXEC,
    ErrorPath,
    command_of,
    documented_statuses,
    leaf_commands,
)

COMMANDS = leaf_commands()


def test_the_tables_cover_every_command_and_their_ids_are_unique() -> None:
    paths = (*ERROR_PATHS, *OUTCOME_PATHS)
    assert len({p.id for p in paths}) == len(paths)
    covered = {command_of(p, COMMANDS) for p in ERROR_PATHS}
    assert set(COMMANDS) <= covered, sorted(set(COMMANDS) - covered)
    assert None in covered  # the root's own errors (unknown command, unknown option)


@pytest.mark.parametrize("command", sorted(COMMANDS), ids=" ".join)
def test_every_command_documents_its_exit_status_and_2_is_a_usage_error(
    command: tuple[str, ...],
) -> None:
    statuses = documented_statuses(COMMANDS[command])
    assert 0 in statuses
    assert "usage" in statuses.get(EXIT_USAGE, "")


@pytest.mark.parametrize("path", (*ERROR_PATHS, *OUTCOME_PATHS), ids=lambda p: p.id)
def test_each_path_expects_the_status_its_command_documents(path: ErrorPath) -> None:
    # The tables' statuses are the documented ones; the integration test holds the real ones
    # to the tables. A path that names no command (or a group's unknown one) is the root's
    # usage error.
    command = command_of(path, COMMANDS)
    if command is None:
        assert (path.status, path.means) == (EXIT_USAGE, "usage")
        return
    statuses = documented_statuses(COMMANDS[command])
    assert path.means in statuses.get(path.status, ""), (path.status, statuses)


@pytest.mark.parametrize("argv", [(), *sorted(COMMANDS), ("policy",), ("log",)], ids=repr)
def test_help_is_plain_text(argv: tuple[str, ...]) -> None:
    helped = CliRunner().invoke(app, [*argv, "--help"], terminal_width=100)
    assert helped.exit_code == 0, helped.output
    for markup in ("``", ":data:", ":func:", ":class:", "`", "╭", "│", "─"):
        assert markup not in helped.output, markup


def test_a_library_error_no_command_caught_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def fails() -> None:
        raise ConfigurationError("workdir='/x' is not\na directory")

    assert finish(fails) == EXIT_USAGE
    assert capsys.readouterr().err == "safeexec: error: workdir '/x' is not a directory\n"


def test_a_fault_is_one_line_and_status_70_and_its_traceback_is_there_when_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def breaks() -> None:
        raise KeyError("k")

    monkeypatch.delenv(TRACEBACK_ENV, raising=False)
    assert finish(breaks) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("safeexec: internal error: KeyError")
    monkeypatch.setenv(TRACEBACK_ENV, "1")
    with pytest.raises(KeyError):
        finish(breaks)


def test_keyword_notation_is_said_in_words_and_nothing_else_changes() -> None:
    assert in_words("cannot open state_dir='/s': Not a directory") == (
        "cannot open state dir '/s': Not a directory"
    )
    assert in_words("--format 'x'; SAFEEXEC_SERVICE_TOKENS=id=token") == (
        "--format 'x'; SAFEEXEC_SERVICE_TOKENS=id=token"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("explain", "SX201"),  # small: written at exit, when stdout is flushed
        ("run", "-"),  # written by the command as it runs, with a session open
    ],
    ids=" ".join,
)
def test_a_closed_output_pipe_ends_the_command_quietly_by_sigpipe(
    tmp_path: Path, argv: tuple[str, ...]
) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # `| head -1` that has already gone
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    try:
        done = subprocess.run(
            [str(SAFEEXEC), *argv],
            input=b"```python\nprint('x' * 100)\n```\n",
            stdout=writer,
            stderr=subprocess.PIPE,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)
    assert done.stderr == b""
    assert done.returncode == -signal.SIGPIPE
