"""``safeexec policy test|lint|docs``: the policy author's everyday commands.

Exit codes: 0 clean, 1 tests or lint failed, 2 a usage or policy error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from safeexec.cli.groups import command_group, usage_error
from safeexec.errors import PolicyError
from safeexec.policy.docs import write_rule_docs
from safeexec.policy.dsl_rules import DSL_RULES
from safeexec.policy.engine_rules import ENGINE_RULES
from safeexec.policy.lint import lint_policy
from safeexec.policy.loader import load_policy
from safeexec.policy.network_rules import NETWORK_RULES
from safeexec.policy.packs import shipped_packs
from safeexec.policy.schema import Policy
from safeexec.testing.runner import run_pack_tests

__all__ = ["policy_app"]

EXIT_OK = 0
EXIT_FAILED = 1

policy_app = command_group(
    "policy",
    "Test, lint and document policy packs.",
    epilog="Examples: 'safeexec policy test' (every shipped pack), 'safeexec policy test "
    "./my-pack', 'safeexec policy lint default', 'safeexec policy docs --out docs/rules'.",
)


@policy_app.command("test")
def test(
    packs: Annotated[
        list[str] | None,
        typer.Argument(help="Pack names or directories (default: every shipped pack)."),
    ] = None,
) -> None:
    """Run each pack's *.cases.py and *.test.toml tests.

    Exit status: 0 every test passed; 1 a test failed (a pack directory that does not load
    included); 2 a usage or configuration error (no such pack).
    """
    failed = False
    for pack in packs or list(shipped_packs()):
        if not Path(pack).is_dir():
            _load(pack)  # a name that is no shipped pack is a usage error, not a failed test
        report = run_pack_tests(pack)
        for failure in report.failures:
            typer.echo(str(failure))
        status = "ok" if report.ok else f"FAILED ({len(report.failures)})"
        typer.echo(
            f"{pack}: {report.cases} cases, {report.annotations} annotations, "
            f"{report.todos} known misses (todo-expect): {status}"
        )
        failed = failed or not report.ok
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@policy_app.command("lint")
def lint(
    packs: Annotated[
        list[str] | None,
        typer.Argument(help="Pack names, directories or .toml files (default: shipped packs)."),
    ] = None,
) -> None:
    """Load each pack (schema errors exit 2) and flag documentation gaps and contradictions.

    Exit status: 0 clean; 1 issues found; 2 a usage or configuration error (no such pack, a
    schema error).
    """
    failed = False
    for pack in packs or list(shipped_packs()):
        policy = _load(pack)
        issues = lint_policy(policy)
        for issue in issues:
            typer.echo(str(issue))
        typer.echo(f"{pack}: {len(policy.rules)} rules, {len(issues)} issue(s)")
        failed = failed or bool(issues)
    raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)


@policy_app.command("docs")
def docs(
    out: Annotated[Path, typer.Option("--out", help="Directory to write the pages into.")],
    policy: Annotated[str, typer.Option("--policy", help="Policy pack to document.")] = "default",
) -> None:
    """Write one Markdown page per rule (and an index) for a pack, engine rules included.

    Exit status: 0 written; 2 a usage or configuration error (no such pack, an unwritable --out).
    """
    loaded = _load(policy)
    try:
        written = write_rule_docs(loaded, out, extra=(*ENGINE_RULES, *DSL_RULES, *NETWORK_RULES))
    except OSError as exc:
        usage_error(f"cannot write the pages into {str(out)!r}: {exc.strerror or exc}")
    typer.echo(f"wrote {len(written)} pages to {out}")


def _load(pack: str) -> Policy:
    try:
        return load_policy(pack)
    except PolicyError as exc:
        usage_error(str(exc))
