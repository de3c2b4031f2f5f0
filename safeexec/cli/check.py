"""``safeexec check``: the static gate on code files (``safeexec explain`` prints the rules).

``check`` exit codes (as ``run``): 0 every input is allowed, 3 any is denied or needs approval,
2 a usage or policy error. Output: ruff-style text with a caret, JSON, or SARIF 2.1.0.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from safeexec import __version__
from safeexec._support.escaping import escape_controls
from safeexec.cli.groups import one_shot, usage_error
from safeexec.cli.inputs import read_input, reply_action
from safeexec.decide import decide
from safeexec.errors import ConfigurationError, PolicyError
from safeexec.model.values import Action, Enforcement, Finding, Severity, Verdict
from safeexec.policy.docs import render_rule
from safeexec.policy.dsl_rules import DSL_RULES
from safeexec.policy.engine_rules import ENGINE_RULES
from safeexec.policy.loader import load_policy
from safeexec.policy.network_rules import NETWORK_RULES
from safeexec.policy.schema import Policy, Rule

if TYPE_CHECKING:
    # The gate (and its parsers) load only when code is checked: `explain` needs none of it.
    from safeexec.gate import GateResult

__all__ = ["check", "render_sarif", "render_text"]

EXIT_OK = 0
EXIT_DENIED = 3

_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {
    Enforcement.DENY: "error",
    Enforcement.APPROVE: "warning",
    Enforcement.WARN: "warning",
    Enforcement.AUDIT: "note",
}
_SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "1.0",
}


def check(
    files: Annotated[
        list[str] | None,
        typer.Argument(help="Python files to check; '-' or none reads stdin."),
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", help="Policy pack name or path to a pack or .toml file.")
    ] = "default",
    output_format: Annotated[
        str, typer.Option("--format", help="Output format: text, json or sarif.")
    ] = "text",
    backend: Annotated[
        str | None, typer.Option("--backend", help="Backend to ask for (default: the policy's).")
    ] = None,
    suggest: Annotated[
        bool,
        typer.Option(
            "--suggest-policy",
            help="Print the smallest pack extension whose imports would let the files pass.",
        ),
    ] = False,
) -> None:
    """Check code against a policy without running it.

    Exit status: 0 every input is allowed; 2 a usage or configuration error; 3 denied or needs
    approval (with --suggest-policy: still refused under the suggestion).
    """
    with one_shot():
        if output_format not in ("text", "json", "sarif"):
            usage_error(f"--format {output_format!r} is not one of text, json, sarif")
        try:
            loaded = load_policy(policy)
        except PolicyError as exc:
            usage_error(str(exc))
        if suggest:
            actions = [reply_action(_read(name), action_id=name) for name in files or ["-"]]
            code = "\n".join(action.code for action in actions if action is not None)
            from safeexec.gate import suggest_policy

            suggestion = suggest_policy(code, loaded, backend=backend)
            typer.echo(suggestion.toml or f"# no import extension needed under {loaded.info.id!r}")
            for finding in suggestion.remaining:
                typer.echo(f"# still refused: {finding.rule} {escape_controls(finding.message)}")
            raise typer.Exit(EXIT_DENIED if suggestion.remaining else EXIT_OK)
        results: list[tuple[str, GateResult]] = []
        for name in files or ["-"]:
            results.append((name, _check_reply(name, loaded, backend)))
        if output_format == "json":
            typer.echo(json.dumps(render_json(results), indent=2))
        elif output_format == "sarif":
            typer.echo(json.dumps(render_sarif(results, loaded), indent=2))
        else:
            typer.echo(render_text(results), nl=False)
        denied = any(r.decision.verdict is not Verdict.ALLOW for _, r in results)
        raise typer.Exit(EXIT_DENIED if denied else EXIT_OK)


# ---------------------------------------------------------------------------------------------
# Renderers


def render_text(results: list[tuple[str, GateResult]]) -> str:
    """ruff-style lines ``file:line:col: SX201 message`` with the source line and a caret.

    The code under check is untrusted text: its controls reach the terminal escaped (one for one,
    so the caret still points at the right column).
    """
    out: list[str] = []
    for name, result in results:
        # Spans point into the code as checked (the parser normalises line ends and identifiers).
        checked = result.parsed.code if result.parsed is not None else result.action.code
        lines = checked.split("\n")
        for finding in result.decision.findings:
            line, column = _position(finding)
            tag = "" if finding.enforcement is Enforcement.DENY else f" [{finding.enforcement}]"
            message = escape_controls(finding.message.replace("\n", " "))
            out.append(f"{escape_controls(name)}:{line}:{column}: {finding.rule} {message}{tag}")
            if finding.span is not None and 1 <= line <= len(lines):
                source = lines[line - 1]
                width = 1
                if finding.span.end_line == line:
                    width = max(1, finding.span.end_column - column + 1)
                gutter = " " * len(str(line))
                out.append(f"  {line} | {escape_controls(source)}")
                out.append(f"  {gutter} | {' ' * (column - 1)}{'^' * min(width, 200)}")
        verdict = result.decision.verdict.value
        count = len(result.decision.findings)
        plural = "s" if count != 1 else ""
        out.append(f"{escape_controls(name)}: {verdict} ({count} finding{plural})")
    return "\n".join(out) + "\n"


def render_json(results: list[tuple[str, GateResult]]) -> list[object]:
    """One object per input: the file name and its full Decision as JSON."""
    return [{"file": name, "decision": result.decision.to_json()} for name, result in results]


def render_sarif(results: list[tuple[str, GateResult]], policy: Policy) -> dict[str, object]:
    """A SARIF 2.1.0 log that GitHub code scanning accepts (one run, rules with help text)."""
    known = {r.id: r for r in (*ENGINE_RULES, *DSL_RULES, *NETWORK_RULES, *policy.rules)}
    rule_index: dict[str, int] = {}
    rules: list[dict[str, object]] = []
    sarif_results: list[dict[str, object]] = []
    for name, result in results:
        for finding in result.decision.findings:
            if finding.rule not in rule_index:
                rule_index[finding.rule] = len(rules)
                rules.append(_sarif_rule(finding, known.get(finding.rule)))
            line, column = _position(finding)
            region: dict[str, int] = {"startLine": line, "startColumn": column}
            if finding.span is not None:
                region["endLine"] = finding.span.end_line
                region["endColumn"] = finding.span.end_column + 1  # SARIF end is exclusive
            fingerprint = hashlib.sha256(
                f"{finding.rule}:{finding.evidence}:{result.action.code_sha256}".encode()
            ).hexdigest()[:32]
            sarif_results.append(
                {
                    "ruleId": finding.rule,
                    "ruleIndex": rule_index[finding.rule],
                    "level": _LEVEL[finding.enforcement],
                    "message": {"text": finding.message},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(name), "uriBaseId": "%SRCROOT%"},
                                "region": region,
                            }
                        }
                    ],
                    "partialFingerprints": {"safeexecFinding/v1": fingerprint},
                }
            )
    return {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "safeexec",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "properties": {"policyId": policy.info.id, "policyDigest": policy.digest},
                "results": sarif_results,
            }
        ],
    }


def _sarif_rule(finding: Finding, rule: Rule | None) -> dict[str, object]:
    description = (rule.description if rule else "") or finding.name
    help_text = render_rule(rule) if rule is not None else finding.name
    return {
        "id": finding.rule,
        "name": "".join(part.capitalize() for part in finding.name.split("-")),
        "shortDescription": {"text": finding.name},
        "fullDescription": {"text": description},
        "help": {"text": help_text, "markdown": help_text},
        "defaultConfiguration": {"level": _LEVEL[finding.enforcement]},
        "properties": {
            "tags": ["security", "safeexec"],
            "security-severity": _SECURITY_SEVERITY[finding.severity],
            "precision": "high",
        },
    }


def _position(finding: Finding) -> tuple[int, int]:
    if finding.span is None:
        return 1, 1
    return finding.span.start_line, finding.span.start_column


def _uri(name: str) -> str:
    if name == "-":
        return "stdin"
    return Path(name).as_posix().removeprefix("./")


def _read(name: str) -> str:
    try:
        return read_input(name, what="Python files or model replies")
    except ConfigurationError as exc:
        usage_error(str(exc))


def _check_reply(name: str, policy: Policy, backend: str | None) -> GateResult:
    """The gate's verdict on the code in one reply, extracted as ``safeexec run`` does."""
    from safeexec.gate import GateResult, check_action, fresh_budget

    action = reply_action(_read(name), action_id=f"check:{name}")
    if action is not None:
        return check_action(action, policy, backend=backend)
    from safeexec.session.steps import (
        NO_CODE_FINDING,  # the session's steps (asyncio): only when no code
    )

    # No code: denied, as a session denies it (SX003), so check and run agree.
    decision = decide(
        findings=(NO_CODE_FINDING,),
        estimate=None,
        policy=policy,
        budget=fresh_budget(policy),
        backend=backend,
    )
    empty = Action.create("", action_id=f"check:{name}")
    return GateResult(action=empty, parsed=None, estimate=None, decision=decision)
