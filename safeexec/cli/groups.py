"""The one way a ``safeexec`` sub-command group is made (``policy``, ``log``, ...)."""

from __future__ import annotations

import typer

__all__ = ["command_group"]


def command_group(name: str, help: str, *, epilog: str | None = None) -> typer.Typer:
    """A sub-app that shows its help when called bare; ``epilog`` holds its examples."""
    return typer.Typer(
        name=name,
        help=help,
        epilog=epilog,
        no_args_is_help=True,
        add_completion=False,
    )
