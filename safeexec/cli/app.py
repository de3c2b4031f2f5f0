"""The root ``safeexec`` command; each submodule registers its own commands."""

from __future__ import annotations

from typing import Annotated

import typer

from safeexec import __version__
from safeexec.cli.agent import agent_app
from safeexec.cli.check import check, explain
from safeexec.cli.doctor import doctor
from safeexec.cli.dsl import dsl_app
from safeexec.cli.log import log_app
from safeexec.cli.mcp import mcp
from safeexec.cli.policy import policy_app
from safeexec.cli.run import run

app = typer.Typer(
    name="safeexec",
    help="Run model-generated code without trusting it.",
    epilog="Examples: `safeexec run reply.md` (a model reply, a .py file or - for stdin), "
    "`safeexec check --policy strict code.py`, `safeexec explain SX201`, `safeexec doctor`, "
    "`safeexec log show`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
    """Print the safeexec version."""
    typer.echo(__version__)


app.command("run")(run)
app.command("check")(check)
app.command("explain")(explain)
app.command("doctor")(doctor)
app.command("mcp")(mcp)
app.add_typer(policy_app, name="policy")
app.add_typer(log_app, name="log")
app.add_typer(dsl_app, name="dsl")
app.add_typer(agent_app, name="agent")


def main() -> None:
    """Console-script entry point."""
    app()
