"""``safeexec dsl plan|check FILE``: the DSL gate's plan and findings, without running anything.

Both are thin over :func:`safeexec.gate.check` in the ``dsl`` mode: the same decision a session
would make, with the tools of ``--tools`` (typed) or the policy's grantable tools (names only).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from safeexec.capabilities.gateway import ToolSpec
from safeexec.cli.groups import command_group, usage_error
from safeexec.errors import PolicyError
from safeexec.gate import GateResult, check_action, dsl_tool_signatures
from safeexec.model.values import Action, ActionSource, Enforcement, Verdict
from safeexec.policy.loader import load_policy

__all__ = ["dsl_app", "load_tool_specs", "render_findings"]

EXIT_OK, EXIT_REFUSED = 0, 1

dsl_app = command_group(
    "dsl",
    "The DSL mode: check a program, or print its plan.",
    epilog="Examples: 'safeexec dsl check pipeline.dsl --policy default', 'safeexec dsl plan "
    "pipeline.dsl --json --tools tools.py' (typed tools from a trusted file).",
)

_ToolsOption = Annotated[
    Path | None,
    typer.Option("--tools", help="A trusted Python file whose module-level @tool specs to use."),
]
_PolicyOption = Annotated[str, typer.Option("--policy", help="Policy pack to check against.")]


def load_tool_specs(path: Path | None) -> tuple[ToolSpec, ...]:
    """Every ``ToolSpec`` at module level in the host's own file ``path`` (it is executed)."""
    if path is None:
        return ()
    spec = importlib.util.spec_from_file_location("safeexec_dsl_tools", path)
    if spec is None or spec.loader is None:
        _fail(f"cannot load tools from {str(path)!r}; pass a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        _fail(f"cannot load tools from {str(path)!r}: {type(exc).__name__}: {exc}")
    return tuple(v for v in vars(module).values() if isinstance(v, ToolSpec))


def render_findings(name: str, result: GateResult) -> str:
    """``file:line:col: SX7xx message`` with the caret lines each finding carries."""
    out = []
    for f in result.findings:
        if f.enforcement is Enforcement.AUDIT:
            continue
        line, column = (f.span.start_line, f.span.start_column) if f.span else (1, 1)
        out.append(f"{name}:{line}:{column}: {f.rule} {f.message}")
        if f.span is not None and f.evidence:
            out.extend("  | " + x for x in f.evidence.split("\n"))
    out.append(f"{name}: {result.decision.verdict.value}")
    return "\n".join(out) + "\n"


def _gate(file: Path, tools: Path | None, policy: str) -> GateResult:
    try:
        source = file.read_text(encoding="utf-8")
        loaded = load_policy(policy)
    except OSError as exc:
        _fail(f"cannot read {str(file)!r}: {exc.strerror}")
    except PolicyError as exc:
        _fail(str(exc))
    signatures = dsl_tool_signatures(loaded, load_tool_specs(tools))
    action = Action.create(source, source=ActionSource.RAW, language="dsl")
    return check_action(action, loaded, backend="dsl", tools=signatures)


@dsl_app.command("check")
def check_command(
    file: Path, tools: _ToolsOption = None, policy: _PolicyOption = "default"
) -> None:
    """Check a DSL program (names, types, bounds, grants); exit 1 unless it is allowed.

    Exit status: 0 allowed; 1 refused; 2 a usage or configuration error.
    """
    result = _gate(file, tools, policy)
    typer.echo(render_findings(str(file), result), nl=False)
    raise typer.Exit(EXIT_OK if result.decision.verdict is Verdict.ALLOW else EXIT_REFUSED)


@dsl_app.command("plan")
def plan_command(
    file: Path,
    tools: _ToolsOption = None,
    policy: _PolicyOption = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Print the static plan of a DSL program (tools, bounds, effects): what a human approves.

    Exit status: 0 planned and allowed; 1 refused; 2 a usage or configuration error.
    """
    result = _gate(file, tools, policy)
    plan = None if result.dsl is None else result.dsl.plan
    if plan is None:
        typer.echo(render_findings(str(file), result), nl=False, err=True)
        raise typer.Exit(EXIT_REFUSED)
    if as_json:
        typer.echo(json.dumps(plan.to_json(), indent=2, ensure_ascii=False))
    else:
        typer.echo(plan.to_text(), nl=False)
    if result.decision.verdict is Verdict.DENY:
        typer.echo(render_findings(str(file), result), nl=False, err=True)
        raise typer.Exit(EXIT_REFUSED)


def _fail(message: str) -> NoReturn:
    usage_error(message)
