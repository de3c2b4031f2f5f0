"""``safeexec doctor``: which confinement layers this machine gives the native mode, proven."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from safeexec.backends.native import diagnose
from safeexec.backends.restricted import in_process_gaps
from safeexec.policy import load_policy, shipped_packs
from safeexec.restricted_proof.reachability import CrawlReport, crawl_modes
from safeexec.sandbox.ladder import GUIDANCE, Rung
from safeexec.sandbox.layers import Layer

__all__ = ["EXIT_FAILS_OPEN", "EXIT_OK", "EXIT_REQUIREMENTS_UNMET", "doctor"]


EXIT_OK = 0
"""The policy's requirements are met and every self-test held."""
EXIT_FAILS_OPEN = 1
"""A layer reported active let through what it should stop (or a restricted guard was
reached): the confinement is broken, whatever the policy asks."""
EXIT_REQUIREMENTS_UNMET = 2
"""The policy's ``[backends] rung`` or ``require`` is not met here: its sessions would be
refused with ``BackendUnavailable``."""

_IN_PROCESS_NOTE = (
    "restricted-inprocess is not a security boundary: it runs the code in the host process, "
    "behind the restricted guards alone. It is for measuring the guards' overhead without the "
    "worker round trip and for hosts that cannot fork; no face offers it unless its operator "
    "allows it (serve/mcp --allow-in-process, allow_in_process=True)."
)


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    policy: Annotated[
        str,
        typer.Option("--policy", help="The pack (or path) whose requirements to check."),
    ] = "default",
    reachability: Annotated[
        bool,
        typer.Option(
            "--reachability", help="Also crawl what restricted code can reach, for every pack."
        ),
    ] = False,
) -> None:
    """Report each layer (kernel, active, self-test) and the rung this host reaches; exit 1 if a
    layer fails open, 2 if the policy's rung or layers are unmet; list what
    restricted-inprocess does not stop; --reachability proves the restricted guards.

    Every missing layer is listed with what it would have stopped and how to get it; "all
    layers active and proven" is printed only when every layer is active and none failed its
    self-test.

    Exit status: 0 the --policy pack's requirements are met and every self-test held; 1 a layer
    fails open; 2 the policy's rung or layers are unmet, or a usage or configuration error.
    """
    backends = load_policy(policy).backends
    report = diagnose()
    crawled = _crawl_packs() if reachability else []
    reached = [f"{pack}: {r.kind} via {r.path}" for pack, c in crawled for r in c.reached]
    wanted = Rung(backends.rung) if backends.rung is not None else None
    unmet = report.unmet(rung=wanted, require=frozenset(Layer(n) for n in backends.require))
    if not report.ok or reached:
        code = EXIT_FAILS_OPEN
    else:
        code = EXIT_REQUIREMENTS_UNMET if unmet else EXIT_OK
    rung = report.rung.value if report.rung is not None else None
    if as_json:
        rows = [
            {
                "layer": check.layer.value,
                "supported": check.supported,
                "active": check.active,
                "proven": check.proven,
                "detail": check.detail,
                "stops": GUIDANCE[check.layer][0],
                "how_to_get": GUIDANCE[check.layer][1],
            }
            for check in report.checks
        ]
        document = {
            "ok": code == EXIT_OK,
            "exit_status": code,
            "rung": rung,
            "policy": {"pack": policy, "rung": backends.rung, "require": list(backends.require)},
            "unmet": unmet,
            "missing": [layer.value for layer in report.missing],
            "layers": rows,
            "restricted_inprocess": _IN_PROCESS_NOTE,
            "restricted_inprocess_does_not_protect_against": list(in_process_gaps()),
        }
        if reachability:
            document["restricted_reachable"] = reached
        typer.echo(json.dumps(document, indent=2))
        raise typer.Exit(code=code)
    typer.echo(f"{'layer':<16}{'kernel':<9}{'active':<9}{'self-test':<11}detail")
    for check in report.checks:
        proven = {True: "blocks", False: "FAILED", None: "-"}[check.proven]
        proven = proven if check.active else "-"
        typer.echo(
            f"{check.layer.value:<16}{_yes(check.supported):<9}{_yes(check.active):<9}"
            f"{proven:<11}{check.detail}"
        )
    typer.echo(f"rung: {rung or 'none (below minimal)'}")
    if report.complete and report.ok:
        typer.echo("all layers active and proven")
    else:
        total = len(report.checks)
        typer.echo(f"{total - len(report.missing)} of {total} layers active; missing, each with")
        typer.echo("what it would have stopped:")
        fixes: dict[str, list[str]] = {}
        for layer in report.missing:
            stops, how = GUIDANCE[layer]
            typer.echo(f"  - {layer.value}: {stops}")
            fixes.setdefault(how, []).append(layer.value)
        typer.echo("how to get them:")
        for how, names in fixes.items():
            typer.echo(f"  - {', '.join(names)}: {how}")
    if not report.ok:
        typer.echo("SOME LAYERS FAIL OPEN (self-test FAILED above)")
    typer.echo(
        f"policy {policy!r} (rung {backends.rung or 'any'}"
        f"{', require ' + ', '.join(backends.require) if backends.require else ''}): "
        + ("requirements met" if not unmet else "NOT MET: " + "; ".join(unmet))
    )
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
    raise typer.Exit(code=code)


def _crawl_packs() -> list[tuple[str, CrawlReport]]:
    return [
        (pack, crawled)
        for pack in shipped_packs()
        for crawled in crawl_modes(load_policy(pack).imports.allow)
    ]


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"
