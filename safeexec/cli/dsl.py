"""``safeexec dsl plan|check FILE``: the DSL's static plan and its findings, without running."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Annotated

import typer

from safeexec.capabilities import ToolSpec
from safeexec.dsl.front import FrontResult, check_source
from safeexec.dsl.signatures import ToolSignature, signature_of_spec
from safeexec.model import Enforcement

__all__ = ["dsl_app", "load_tool_signatures", "render_findings"]

dsl_app = typer.Typer(
    help="The DSL mode: check a program, or print its plan.", no_args_is_help=True
)

_ToolsOption = Annotated[
    Path | None,
    typer.Option(
        "--tools",
        help="A trusted Python file whose module-level @tool specs the program may call.",
    ),
]


def load_tool_signatures(path: Path | None) -> tuple[ToolSignature, ...]:
    """The signatures of every ``ToolSpec`` at module level in the host file ``path``."""
    if path is None:
        return ()
    spec = importlib.util.spec_from_file_location("safeexec_dsl_tools", path)
    if spec is None or spec.loader is None:
        raise typer.BadParameter(f"cannot load tools from {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(signature_of_spec(v) for v in vars(module).values() if isinstance(v, ToolSpec))


def render_findings(name: str, result: FrontResult) -> str:
    """``file:line:col: SX7xx message`` with the caret lines the finding carries."""
    out = []
    for f in result.findings:
        if f.enforcement is Enforcement.AUDIT:
            continue
        line, column = (f.span.start_line, f.span.start_column) if f.span else (1, 1)
        out.append(f"{name}:{line}:{column}: {f.rule} {f.message}")
        if f.span is not None and f.evidence:
            out.extend("  | " + x for x in f.evidence.split("\n"))
    verdict = "accepted" if result.accepted else "refused"
    out.append(f"{name}: {verdict}")
    return "\n".join(out) + "\n"


def _front(file: Path, tools: Path | None) -> FrontResult:
    try:
        source = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {str(file)!r}: {exc.strerror}") from None
    return check_source(source, load_tool_signatures(tools))


@dsl_app.command("check")
def check(file: Path, tools: _ToolsOption = None) -> None:
    """Check a DSL program: names, types, bounds; exit 1 when it is refused."""
    result = _front(file, tools)
    typer.echo(render_findings(str(file), result), nl=False)
    raise typer.Exit(0 if result.accepted else 1)


@dsl_app.command("plan")
def plan(
    file: Path,
    tools: _ToolsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Print the static plan of a DSL program (tools, bounds, effects) — what a human approves."""
    result = _front(file, tools)
    if result.plan is None or not result.accepted:
        typer.echo(render_findings(str(file), result), nl=False, err=True)
        raise typer.Exit(1)
    if as_json:
        typer.echo(json.dumps(result.plan.to_json(), indent=2, ensure_ascii=False))
    else:
        typer.echo(result.plan.to_text(), nl=False)
