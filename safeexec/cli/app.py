"""The root ``safeexec`` command; each submodule defines its own commands, loaded on first use.

A command's module is imported only when that command runs (or its ``--help`` is asked for): the
modules pull in the gate, the sandbox, the harness or lark, and ``safeexec --help`` or
``safeexec check`` should not pay for what they do not use. The root help lists the commands
from :data:`COMMANDS` without importing them; a test keeps those lines equal to the commands' own.
"""

from __future__ import annotations

import errno
import gc
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

if TYPE_CHECKING:
    # Typer's own click (vendored since 0.20): the types its groups are built from.
    from typer._click import Command, Context, HelpFormatter

from safeexec import __version__
from safeexec.cli.groups import EXIT_INTERNAL, TRACEBACK_ENV, OutputClosed, finish
from safeexec.model.fieldwise import Fieldwise

__all__ = ["COMMANDS", "LazyCommand", "app", "main"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class LazyCommand(Fieldwise):
    """Where a command lives (``module:attribute``, a function or a ``typer.Typer`` group) and
    its one-line help for the root's command list."""

    target: str
    help: str


COMMANDS: dict[str, LazyCommand] = {
    "run": LazyCommand(
        target="safeexec.cli.run:run",
        help="Run the code in model replies under a policy, in one session (state carries over).",
    ),
    "check": LazyCommand(
        target="safeexec.cli.check:check",
        help="Check code against a policy without running it.",
    ),
    "explain": LazyCommand(
        target="safeexec.cli.explain:explain",
        help="Print a rule's documentation: what it does, why it is bad, an example, "
        "known bypasses.",
    ),
    "doctor": LazyCommand(
        target="safeexec.cli.doctor:doctor",
        help="Report each layer (kernel, active, self-test) and the rung this host reaches; exit "
        "1 if a layer fails open, 2 if the policy's rung or layers are unmet; list what "
        "restricted-inprocess does not stop; --reachability proves the restricted guards.",
    ),
    "policy": LazyCommand(
        target="safeexec.cli.policy:policy_app", help="Test, lint and document policy packs."
    ),
    "log": LazyCommand(target="safeexec.cli.log:log_app", help="Inspect the audit log."),
    "dsl": LazyCommand(
        target="safeexec.cli.dsl_commands:dsl_app",
        help="The DSL mode: check a program, or print its plan.",
    ),
    "agent": LazyCommand(target="safeexec.cli.agent:agent_app", help="Run agents on task suites."),
    "mcp": LazyCommand(
        target="safeexec.cli.mcp:mcp",
        help="Serve safeexec to MCP clients: run_code, check_code, files, reset_session.",
    ),
    "serve": LazyCommand(
        target="safeexec.cli.serve:serve",
        help="Serve safeexec over HTTP: sessions, runs, files, the static gate (bearer tokens).",
    ),
}


def load_command(name: str) -> Command:
    """Import the command ``name`` of :data:`COMMANDS` and build its click command."""
    module, _, attribute = COMMANDS[name].target.partition(":")
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        command: Command = typer.main.get_group(target)
    else:
        single = typer.Typer(
            add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
        )
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    return command


class _LazyGroup(TyperGroup):
    """The root group: eager commands as usual, the rest from :data:`COMMANDS` when asked for;
    every command line ends through :func:`~safeexec.cli.groups.finish`."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        def call() -> Any:
            return super(_LazyGroup, self).main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )

        if not standalone_mode:
            return call()
        sys.exit(finish(call))

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise OutputClosed from exc
            raise

    def list_commands(self, ctx: Context) -> list[str]:
        return [*super().list_commands(ctx), *COMMANDS]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = self.commands[cmd_name] = load_command(cmd_name)
        return command

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = [
            (name, command.get_short_help_str(limit=formatter.width))
            for name, command in self.commands.items()
            if not command.hidden
        ]
        rows += [(name, lazy.help) for name, lazy in COMMANDS.items() if name not in self.commands]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="safeexec",
    help="Run model-generated code without trusting it.",
    epilog="Examples: 'safeexec run reply.md' (a model reply, a .py file or - for stdin), "
    "'safeexec check --policy strict code.py', 'safeexec explain SX201', 'safeexec doctor', "
    "'safeexec log show'. Every command: exit status 2 is a usage or configuration error (one "
    f"line on stderr), {EXIT_INTERNAL} a fault of safeexec (one line; {TRACEBACK_ENV}=1 shows "
    "the traceback); a closed output pipe ends a command by SIGPIPE, as coreutils' do.",
    cls=_LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: rich's would import every command to lay out its panels.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Run model-generated code without trusting it."""


@app.command()
def version() -> None:
    """Print the safeexec version.

    Exit status: 0 printed; 2 a usage error.
    """
    typer.echo(__version__)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    finally:
        # The process exits next. Its shutdown would walk every object the command loaded in
        # the collector's final passes (tens of ms of a one-shot command) to free memory the
        # kernel reclaims anyway; what the commands open, they close themselves.
        gc.freeze()
