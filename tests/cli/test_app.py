"""The root command: lazily loaded subcommands whose listed help matches their own."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from safeexec.cli.app import COMMANDS, app, load_command

runner = CliRunner()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert command.get_short_help_str(limit=1000) == COMMANDS[name].help


def test_root_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    for name in (*COMMANDS, "version"):
        assert f"  {name} " in result.output


def test_subcommand_help_comes_from_the_real_command() -> None:
    result = runner.invoke(app, ["run", "--help"])
    assert result.exit_code == 0, result.output
    assert "--workdir" in result.output


def test_unknown_command_is_a_usage_error() -> None:
    result = runner.invoke(app, ["no-such-command"])
    assert result.exit_code == 2


def _imported_after(*argv: str) -> set[str]:
    """The safeexec modules loaded once the CLI has handled ``argv`` in a fresh interpreter."""
    probe = (
        "import sys\n"
        "from safeexec.cli.app import app\n"
        f"try:\n    app({list(argv)!r})\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(('safeexec', 'libcst', 'lark'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_root_help_imports_no_command_module() -> None:
    loaded = _imported_after("--help")
    assert not {m for m in loaded if m.startswith("safeexec.cli.") and m != "safeexec.cli.app"}
    assert not {m for m in loaded if m.startswith(("libcst", "lark", "safeexec.sandbox"))}


# What only running code needs: the native backend, the template and confinement, the agent loop.
_RUNTIME = (
    "safeexec.backends.native",
    "safeexec.sandbox.zygote",
    "safeexec.sandbox.confine",
    "safeexec.sandbox.seccomp",
    "safeexec.session",
    "safeexec.harness",
)


@pytest.mark.parametrize("argv", [("explain", "SX201"), ("check", "--help")])
def test_check_and_explain_import_no_runtime(argv: tuple[str, ...]) -> None:
    loaded = _imported_after(*argv)
    assert "safeexec.cli.check" in loaded
    assert not {m for m in loaded if m.startswith(_RUNTIME)}


def _is_group(name: str) -> bool:
    module, _, attribute = COMMANDS[name].target.partition(":")
    return isinstance(getattr(importlib.import_module(module), attribute), typer.Typer)


_GROUPS = sorted(name for name in COMMANDS if _is_group(name))


def test_every_group_is_found() -> None:
    assert {"agent", "dsl", "log", "policy"} <= set(_GROUPS)


@pytest.mark.parametrize("name", _GROUPS)
def test_every_command_group_shows_examples_and_its_help_when_called_bare(name: str) -> None:
    # What the shared builder (safeexec.cli.groups.command_group) gives every group.
    helped = runner.invoke(app, [name, "--help"])
    assert helped.exit_code == 0 and "Examples:" in helped.output
    bare = runner.invoke(app, [name])
    assert "Usage:" in bare.output and "Examples:" in bare.output
