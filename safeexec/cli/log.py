"""``safeexec log verify``: is an audit log intact (its hash chain and head agree)?

Exit codes: 0 intact, 1 tampered or unreadable (one line saying why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeexec.audit import verify_log
from safeexec.statedir import default_state_dir

__all__ = ["log_app"]

EXIT_OK = 0
EXIT_TAMPERED = 1

log_app = typer.Typer(
    name="log",
    help="Inspect the audit log.",
    no_args_is_help=True,
    add_completion=False,
)


@log_app.command("verify")
def verify(
    state_dir: Annotated[
        Path | None,
        typer.Argument(
            help="The state dir holding audit.jsonl (default $XDG_STATE_HOME/safeexec, "
            "else ~/.local/state/safeexec)."
        ),
    ] = None,
) -> None:
    """Check every event against the hash chain and its head; exit 1 naming the first break."""
    report = verify_log(default_state_dir() if state_dir is None else state_dir)
    if report.ok:
        typer.echo(f"ok: {report.path}: {report.events} events, chain intact")
        raise typer.Exit(EXIT_OK)
    typer.echo(f"safeexec: log verify: {report.reason}", err=True)
    raise typer.Exit(EXIT_TAMPERED)
