"""``safeexec doctor``: which confinement layers this machine gives the native mode, proven."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from safeexec.backends.native import diagnose
from safeexec.backends.restricted import in_process_gaps
from safeexec.policy import load_policy, shipped_packs
from safeexec.restricted_proof.reachability import CrawlReport, crawl_modes

__all__ = ["doctor"]

_IN_PROCESS_NOTE = (
    "restricted-inprocess is not a security boundary: it runs the code in the host process, "
    "behind the restricted guards alone. It is for measuring the guards' overhead without the "
    "worker round trip and for hosts that cannot fork; no face offers it unless its operator "
    "allows it (serve/mcp --allow-in-process, allow_in_process=True)."
)


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    reachability: Annotated[
        bool,
        typer.Option(
            "--reachability", help="Also crawl what restricted code can reach, for every pack."
        ),
    ] = False,
) -> None:
    """Report each layer (supported, active, self-test) and exit 1 if any fails open; list what
    ``restricted-inprocess`` does not stop; ``--reachability`` proves the restricted guards."""
    report = diagnose()
    crawled = _crawl_packs() if reachability else []
    reached = [f"{pack}: {r.kind} via {r.path}" for pack, c in crawled for r in c.reached]
    ok = report.ok and not reached
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
        document = {
            "ok": ok,
            "layers": rows,
            "restricted_inprocess": _IN_PROCESS_NOTE,
            "restricted_inprocess_does_not_protect_against": list(in_process_gaps()),
        }
        if reachability:
            document["restricted_reachable"] = reached
        typer.echo(json.dumps(document, indent=2))
    else:
        typer.echo(f"{'layer':<16}{'kernel':<9}{'active':<9}{'self-test':<11}detail")
        for check in report.checks:
            proven = {True: "blocks", False: "FAILED", None: "-"}[check.proven]
            typer.echo(
                f"{check.layer.value:<16}{_yes(check.supported):<9}{_yes(check.active):<9}"
                f"{proven:<11}{check.detail}"
            )
        typer.echo("all layers active and proven" if report.ok else "SOME LAYERS ARE MISSING")
        typer.echo(_IN_PROCESS_NOTE)
        typer.echo("restricted-inprocess (opt-in) does not protect against:")
        for gap in in_process_gaps():
            typer.echo(f"  - {gap}")
        if reachability:
            for pack, crawl_report in crawled:
                mode = "in-process" if crawl_report.counting else "worker"
                typer.echo(
                    f"reachability {pack} ({mode}): {crawl_report.objects} objects, "
                    f"{crawl_report.calls} calls, {len(crawl_report.reached)} forbidden reached"
                )
            for line in reached:
                typer.echo(f"  REACHED {line}")
    raise typer.Exit(code=0 if ok else 1)


def _crawl_packs() -> list[tuple[str, CrawlReport]]:
    return [
        (pack, crawled)
        for pack in shipped_packs()
        for crawled in crawl_modes(load_policy(pack).imports.allow)
    ]


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"
