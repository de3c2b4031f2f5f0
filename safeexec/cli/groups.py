"""What every ``safeexec`` command shares: how a sub-command group is made (``policy``, ``log``,
...), how a command reports a usage error, and the contract every command keeps at its end
(:func:`finish`): one line on stderr for any usage or configuration error, never a traceback, and
a closed output pipe ends the command quietly, as coreutils' do."""

from __future__ import annotations

import errno
import gc
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from typer import Abort
from typer._click.exceptions import ClickException, NoArgsIsHelpError

from safeexec._support.collector import gc_paused
from safeexec._support.escaping import escape_controls
from safeexec.errors import SafeExecError

__all__ = [
    "EXIT_INTERNAL",
    "EXIT_USAGE",
    "TRACEBACK_ENV",
    "OutputClosed",
    "command_group",
    "finish",
    "in_words",
    "one_shot",
    "say_error",
    "usage_error",
]

EXIT_USAGE = 2
"""A usage or configuration error (every command)."""
EXIT_INTERNAL = 70
"""A fault of safeexec itself (``EX_SOFTWARE``): one line; :data:`TRACEBACK_ENV` shows the trace."""
TRACEBACK_ENV = "SAFEEXEC_TRACEBACK"


class OutputClosed(Exception):
    """Stdout's reader went away (``| head -1``): raised past the parser's own handling of
    ``EPIPE`` (exit 1, the status of a failed run) so that :func:`finish` ends by ``SIGPIPE``."""


def command_group(name: str, help: str, *, epilog: str | None = None) -> typer.Typer:
    """A sub-app that shows its help when called bare; ``epilog`` holds its examples."""
    return typer.Typer(
        name=name,
        help=help,
        epilog=epilog,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Plain help (no rich panels), on a terminal or not.
        rich_markup_mode=None,
    )


# The library's messages name an argument and its value as Python would (``state_dir='/x'``,
# STYLE.md); a command line has no keyword arguments, so its messages say it in words.
_KEYWORD = re.compile(r"(?<![\w-])([a-z][a-z0-9_]*)=(?=['\"])")


def in_words(message: str) -> str:
    """``message`` with each ``name='value'`` said as ``name 'value'`` (underscores as spaces)."""
    return _KEYWORD.sub(lambda m: m.group(1).replace("_", " ") + " ", message)


def say_error(message: str, *, what: str = "error") -> None:
    """Print ``safeexec: <what>: <message>`` to stderr as one line: controls escaped, keyword
    notation in words (:func:`in_words`)."""
    line = " ".join(in_words(escape_controls(str(message))).split())
    typer.echo(f"safeexec: {what}: {line}", err=True)


def usage_error(message: str) -> NoReturn:
    """Print ``safeexec: error: <message>`` to stderr and exit with :data:`EXIT_USAGE`."""
    say_error(message)
    raise typer.Exit(EXIT_USAGE)


def finish(call: Callable[[], Any]) -> int:
    """Run a command line (``call``: the root group's non-standalone main) and return its exit
    status, keeping the contract of every command at its end.

    A usage error of the parser (unknown option, bad value, missing argument) and a
    :class:`~safeexec.errors.SafeExecError` no command caught are one line and
    :data:`EXIT_USAGE`; a closed stdout (``| head -1``) ends the process by ``SIGPIPE`` once the
    command has unwound, as coreutils' do; any other exception is a fault of safeexec, one line
    and :data:`EXIT_INTERNAL` (its traceback with ``SAFEEXEC_TRACEBACK=1``).
    """
    try:
        status = call()
        sys.stdout.flush()  # here, not at exit, where a closed pipe could only be ignored loudly
    except NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help())
        say_error(f"name a command; see {exc.ctx.command_path} --help")
        return EXIT_USAGE
    except ClickException as exc:
        context = getattr(exc, "ctx", None)  # a usage error's: the command it is about
        where = "safeexec" if context is None else context.command_path
        say_error(f"{exc.format_message()} (see {where} --help)")
        return exc.exit_code
    except Abort:
        say_error("aborted")
        return 1
    except SafeExecError as exc:
        say_error(str(exc))
        return EXIT_USAGE
    except OutputClosed:
        _end_by_sigpipe()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            return _internal(exc)
        _end_by_sigpipe()
    except Exception as exc:
        return _internal(exc)
    return 0 if status is None else int(status)


def _internal(exc: Exception) -> int:
    if os.environ.get(TRACEBACK_ENV):
        raise exc
    say_error(
        f"{type(exc).__name__}: {exc}; this is a fault of safeexec: rerun with "
        f"{TRACEBACK_ENV}=1 for the traceback and report it",
        what="internal error",
    )
    return EXIT_INTERNAL


def _end_by_sigpipe() -> NoReturn:
    """End as a coreutils tool does on a closed pipe: killed by ``SIGPIPE``, nothing printed.

    Python ignores ``SIGPIPE`` (a write fails with ``EPIPE`` instead), so the command unwound
    and closed what it opened first; stdout now points at ``/dev/null`` so that no flush at exit
    can complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    raise SystemExit(128 + signal.SIGPIPE)  # not reached: the signal ends the process


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
