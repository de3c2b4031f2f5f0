"""The root command: lazily loaded subcommands whose listed help matches their own."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

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


_WATCHED = ("safeexec", "libcst", "lark", "RestrictedPython", "asyncio", "importlib.resources")


def _imported_after(*argv: str, cwd: Path | None = None, exit_code: int | None = None) -> set[str]:
    """The modules of :data:`_WATCHED` loaded once the CLI has handled ``argv`` in a fresh
    interpreter (and exited with ``exit_code``, if given; its own output goes to stderr)."""
    probe = (
        "import sys\n"
        "from safeexec.cli.app import app\n"
        "out, sys.stdout = sys.stdout, sys.stderr\n"
        f"try:\n    app({list(argv)!r})\nexcept SystemExit as exc:\n    code = exc.code\n"
        f"loaded = [m for m in sys.modules if m.startswith({_WATCHED!r})]\n"
        "out.write(' '.join([str(code), *loaded]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=cwd
    )
    code, *modules = done.stdout.split()
    if exit_code is not None:
        assert code == str(exit_code), done.stderr
    return set(modules)


def test_root_help_imports_no_command_module() -> None:
    loaded = _imported_after("--help")
    # groups: the contract every command line ends through (light: no command's imports).
    shared = {"safeexec.cli.app", "safeexec.cli.groups"}
    assert not {m for m in loaded if m.startswith("safeexec.cli.") and m not in shared}
    assert not {m for m in loaded if m.startswith(("libcst", "lark", "safeexec.sandbox"))}


# What only running code needs: the native backend, the template and confinement, the agent loop.
_RUNTIME = (
    "safeexec.backends.native",
    "safeexec.sandbox.zygote",
    "safeexec.sandbox.confine",
    "safeexec.sandbox.seccomp",
    "safeexec.session.session",
    "safeexec.harness",
)


# What checking code does not need: RestrictedPython (restricted mode's runtime), libcst (only on
# the parser cross-check's path), the session's steps and asyncio (only for a reply with no code),
# the observation step (its control escaping lives in safeexec._support.escaping), the tool layer
# (tools are granted to sessions; a Python check reads only the policy's tool names).
_NOT_FOR_CHECKING = (
    *_RUNTIME,
    "RestrictedPython",
    "libcst",
    "safeexec.session.steps",
    "asyncio",
    "safeexec.observe",
    "safeexec.capabilities.gateway",
    "safeexec.capabilities.specs",
    "safeexec.capabilities.targets",
)
# What printing a rule does not need: the gate and everything it reads code with.
_GATE = (
    "safeexec.cli.check",
    "safeexec.gate",
    "safeexec.analysis",
    "safeexec.parse",
    "safeexec.extract",
    "safeexec.decide",
    "safeexec.analysis.estimate",
)


@pytest.mark.parametrize("argv", [("explain", "SX201"), ("check", "--help")])
def test_check_and_explain_import_no_runtime(argv: tuple[str, ...]) -> None:
    loaded = _imported_after(*argv)
    assert f"safeexec.cli.{argv[0]}" in loaded
    assert not {m for m in loaded if m.startswith(_NOT_FOR_CHECKING)}


def test_explain_imports_no_part_of_the_gate() -> None:
    loaded = _imported_after("explain", "SX201")
    assert "safeexec.policy.loader" in loaded
    assert not {m for m in loaded if m.startswith(_GATE)}


def test_loading_a_policy_loads_neither_the_tool_layer_nor_importlib_resources() -> None:
    # `run` starts its template once the policy is loaded: what that needs is on its critical path.
    loaded = _imported_after("explain", "SX201")
    assert "safeexec.capabilities.effects" in loaded
    tool_layer = {"safeexec.capabilities.specs", "safeexec.capabilities.targets"}
    assert not {*tool_layer, "importlib.resources"} & loaded


def test_checking_code_imports_no_runtime(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("import math\nprint(math.sqrt(2))\n", encoding="utf-8")
    loaded = _imported_after("check", "t.py", cwd=tmp_path, exit_code=0)
    assert not {m for m in loaded if m.startswith(_NOT_FOR_CHECKING)}


def test_a_native_run_imports_neither_restricted_python_nor_libcst(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ("run", "--mode", "native", "--state-dir", str(tmp_path / "state"), "t.py")
    loaded = _imported_after(*argv, cwd=tmp_path, exit_code=0)
    assert not {m for m in loaded if m.startswith(("RestrictedPython", "libcst"))}


def test_a_one_shot_run_imports_no_asyncio(tmp_path: Path) -> None:
    # The session's async faces (arun, stream) import it when they are called.
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ("run", "--state-dir", str(tmp_path / "state"), "t.py")
    loaded = _imported_after(*argv, cwd=tmp_path, exit_code=0)
    assert "safeexec.session.session" in loaded
    assert not {m for m in loaded if m.startswith("asyncio")}


def test_a_one_shot_run_that_needs_no_approval_imports_no_dsl_plans(tmp_path: Path) -> None:
    # The session loads the DSL's plan approval for a step that needs approval only.
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ("run", "--state-dir", str(tmp_path / "state"), "t.py")
    loaded = _imported_after(*argv, cwd=tmp_path, exit_code=0)
    assert "safeexec.session.session" in loaded
    assert not {"safeexec.dsl.approval", "safeexec.dsl.plan", "importlib.metadata"} & loaded


def test_a_one_shot_run_imports_no_grant_reconciliation(tmp_path: Path) -> None:
    # Session.grant loads it: a run from the CLI grants no tools.
    (tmp_path / "t.py").write_text("print(6 * 7)\n", encoding="utf-8")
    argv = ("run", "--state-dir", str(tmp_path / "state"), "t.py")
    loaded = _imported_after(*argv, cwd=tmp_path, exit_code=0)
    assert "safeexec.session.session" in loaded
    assert "safeexec.policy.grants" not in loaded


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
