"""``safeexec log verify|show|replay``: check, read and re-run an audit log.

Exit codes: 0 intact (``verify``), shown (``show``), every step the same (``replay``); 1 tampered
or unreadable, or a replayed step differs; 2 a usage error (no audit log in the state dir, no such
session, no steps).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeexec._support.escaping import escape_controls
from safeexec.audit.log import verify_log
from safeexec.audit.statedir import default_state_dir
from safeexec.audit.timeline import show_log
from safeexec.cli.groups import command_group, say_error, usage_error
from safeexec.errors import AuditError, ConfigurationError, PolicyError
from safeexec.harness.replay import replay_log

__all__ = ["log_app"]

EXIT_OK = 0
EXIT_TAMPERED = 1
EXIT_DIFFERS = 1
EXIT_USAGE = 2
_LOG_NAME = "audit.jsonl"

log_app = command_group(
    "log",
    "Inspect the audit log.",
    epilog="Examples: 'safeexec log show' (the default state dir), 'safeexec log show STATE_DIR "
    "--session s-1a2b3c', 'safeexec log verify STATE_DIR', 'safeexec log replay STATE_DIR'.",
)

_StateDir = Annotated[
    Path | None,
    typer.Argument(
        help="The state dir holding audit.jsonl (default $XDG_STATE_HOME/safeexec, "
        "else ~/.local/state/safeexec)."
    ),
]
_Session = Annotated[
    str | None, typer.Option("--session", help="Only this session id (default: every session).")
]


def _state(state_dir: Path | None) -> Path:
    return default_state_dir() if state_dir is None else state_dir


def _logged_state(state_dir: Path | None) -> Path:
    """The state dir to read, which must hold an audit log (else a usage error: a wrong dir)."""
    state = _state(state_dir)
    if state.is_dir() and not (state / _LOG_NAME).exists():
        usage_error(
            f"no audit log ({_LOG_NAME}) in {str(state)!r}; pass the state dir the sessions "
            "wrote (--state-dir), or none for the default one"
        )
    return state


@log_app.command("verify")
def verify(state_dir: _StateDir = None) -> None:
    """Check every event against the hash chain and its head; exit 1 naming the first break.

    Exit status: 0 intact; 1 tampered or unreadable; 2 a usage error.
    """
    report = verify_log(_state(state_dir))
    if report.ok:
        typer.echo(f"ok: {report.path}: {report.events} events, chain intact")
        raise typer.Exit(EXIT_OK)
    say_error(report.reason, what="log verify")
    raise typer.Exit(EXIT_TAMPERED)


@log_app.command("show")
def show(
    state_dir: _StateDir = None,
    session: _Session = None,
    lines: Annotated[
        int, typer.Option("--lines", min=2, help="Lines shown of each code and output.")
    ] = 12,
) -> None:
    """Print every step in order: code, verdict and findings, output, artifacts, tools, budget.

    A state dir is shared by every session that used it: --session shows one, and the last
    line says how many others it skipped.

    Exit status: 0 shown; 1 tampered or unreadable; 2 a usage or configuration error (no audit
    log in the state dir, no such session).
    """
    try:
        typer.echo(show_log(_logged_state(state_dir), session_id=session, lines=lines))
    except AuditError as exc:
        say_error(str(exc), what="log show")
        raise typer.Exit(EXIT_TAMPERED) from None
    except ConfigurationError as exc:
        usage_error(str(exc))


@log_app.command("replay")
def replay(
    state_dir: _StateDir = None,
    session: Annotated[
        str | None, typer.Option("--session", help="The session to replay (default: the last).")
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="Pack name or path (default: the recorded policy id)."),
    ] = None,
) -> None:
    """Re-run a session's code steps in a fresh session; exit 1 if any step's output differs.

    Exit status: 0 every step the same; 1 a step differs, or the log is tampered or unreadable;
    2 a usage or configuration error (no audit log in the state dir, no such session or pack).
    """
    try:
        report = replay_log(_logged_state(state_dir), session_id=session, policy=policy)
    except AuditError as exc:
        say_error(str(exc), what="log replay")
        raise typer.Exit(EXIT_TAMPERED) from None
    except (ConfigurationError, PolicyError) as exc:
        say_error(str(exc), what="log replay")
        raise typer.Exit(EXIT_USAGE) from None
    for change in report.environment_changes:
        typer.echo(f"environment changed: {escape_controls(change)}")
    for step in report.steps:
        where = f"#{step.sequence} {escape_controls(step.action_id)}"
        if step.skipped:
            typer.echo(f"{where}: skipped ({escape_controls(step.skipped)})")
        elif step.same:
            note = " (stderr differs)" if step.stderr_differs else ""
            typer.echo(f"{where}: same{note}")
        else:
            typer.echo(f"{where}: DIFFERS: {escape_controls('; '.join(step.differences))}")
    differing = sum(1 for step in report.steps if not step.same and not step.skipped)
    typer.echo(
        f"session {escape_controls(report.session_id)}: {len(report.steps)} steps, "
        f"{differing} differ"
    )
    raise typer.Exit(EXIT_OK if report.ok else EXIT_DIFFERS)
