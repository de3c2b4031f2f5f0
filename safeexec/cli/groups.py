"""What every ``safeexec`` command shares: how a sub-command group is made (``policy``, ``log``,
...) and how a command reports a usage error."""

from __future__ import annotations

from typing import NoReturn

import typer

__all__ = ["EXIT_USAGE", "command_group", "usage_error"]

EXIT_USAGE = 2


def command_group(name: str, help: str, *, epilog: str | None = None) -> typer.Typer:
    """A sub-app that shows its help when called bare; ``epilog`` holds its examples."""
    return typer.Typer(
        name=name,
        help=help,
        epilog=epilog,
        no_args_is_help=True,
        add_completion=False,
    )


def usage_error(message: str) -> NoReturn:
    """Print ``safeexec: error: <message>`` to stderr and exit with :data:`EXIT_USAGE`."""
    typer.echo(f"safeexec: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)
