"""What every ``safeexec`` command shares: how a sub-command group is made (``policy``, ``log``,
...) and how a command reports a usage error."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from safeexec._support.collector import gc_paused

__all__ = ["EXIT_USAGE", "command_group", "one_shot", "usage_error"]

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


_FROZEN_AT_IMPORT = gc.get_freeze_count()


@contextmanager
def one_shot() -> Iterator[None]:
    """Around a command that loads, works once and exits: no collection meanwhile, and what it
    made is then old, scanned only by a full collection.

    Such a command allocates mostly what it keeps until the process exits (modules, the policy,
    a session): the collector would scan the young objects some 30 times for nothing, and once
    more, all of them, at the first allocation after the pause.
    """
    # Unfreezing would thaw what the embedding process froze: then the objects stay young.
    # What was frozen at import is the interpreter's own (3.12 starts with static tuples there;
    # once a pause has promoted, they are thawed and the count is 0).
    promote = gc.get_freeze_count() in (0, _FROZEN_AT_IMPORT)
    with gc_paused():
        try:
            yield
        finally:
            if promote:  # into the oldest generation: freeze and unfreeze is the one way
                gc.freeze()
                gc.unfreeze()
