"""``safeexec doctor``: which confinement layers this machine gives the native mode, proven."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from safeexec.backends.native import diagnose

__all__ = ["doctor"]


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Report each layer (supported, active, self-test) and exit 1 if any fails open."""
    report = diagnose()
    if as_json:
        rows = [
            {
                "layer": check.layer.value,
                "supported": check.supported,
                "active": check.active,
                "proven": check.proven,
                "detail": check.detail,
            }
            for check in report.checks
        ]
        typer.echo(json.dumps({"ok": report.ok, "layers": rows}, indent=2))
    else:
        typer.echo(f"{'layer':<16}{'kernel':<9}{'active':<9}{'self-test':<11}detail")
        for check in report.checks:
            proven = {True: "blocks", False: "FAILED", None: "-"}[check.proven]
            typer.echo(
                f"{check.layer.value:<16}{_yes(check.supported):<9}{_yes(check.active):<9}"
                f"{proven:<11}{check.detail}"
            )
        typer.echo("all layers active and proven" if report.ok else "SOME LAYERS ARE MISSING")
    raise typer.Exit(code=0 if report.ok else 1)


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"
