"""``safeexec agent run``: run a task suite with one agent in one action format and mode.

A thin face over :func:`safeexec.harness.run_suite`. With ``--json``: one JSON object per task,
then one summary object. Without: a progress bar, then a table. Exit code 0 when every task
succeeded, 1 when some did not, 2 for a usage or configuration error.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from safeexec.audit.statedir import default_state_dir
from safeexec.cli.groups import command_group, usage_error
from safeexec.errors import SafeExecError
from safeexec.harness import RunOptions, TaskResult, load_suite, run_suite

__all__ = ["agent_app"]

agent_app = command_group(
    "agent",
    "Run agents on task suites.",
    epilog="Examples: 'safeexec agent run examples/agent_suite --format json --mode restricted "
    "--agent oracle', 'safeexec agent run examples/agent_suite --agent gullible --inject --json'.",
)


class Format(StrEnum):
    CODE = "code"
    JSON = "json"
    TEXT = "text"
    DSL = "dsl"


class AgentMode(StrEnum):
    NATIVE = "native"
    RESTRICTED = "restricted"
    DSL = "dsl"


@agent_app.command("run")
def run(
    suite_dir: Annotated[Path, typer.Argument(help="The suite directory (suite.toml, ...).")],
    action_format: Annotated[Format, typer.Option("--format", help="Action format.")] = Format.CODE,
    mode: Annotated[AgentMode, typer.Option("--mode", help="Execution mode.")] = AgentMode.NATIVE,
    agent: Annotated[
        str,
        typer.Option(
            "--agent",
            help="oracle | noisy | gullible | adversarial (scripted: mechanism measurements), "
            "replay:FILE, openai:MODEL (OPENAI_BASE_URL, OPENAI_API_KEY).",
        ),
    ] = "oracle",
    tasks: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task ids (default: all).")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Environment seed.")] = 0,
    policy: Annotated[str, typer.Option("--policy", help="Policy pack to start from.")] = "default",
    inject: Annotated[
        bool, typer.Option("--inject", help="Plant the tasks' injections in tool results.")
    ] = False,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="Audit log, blobs, turns and recordings (default $XDG_STATE_HOME/safeexec, "
            "else ~/.local/state/safeexec).",
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object per task, then a summary.")
    ] = False,
) -> None:
    """Run every task (or --tasks) of SUITE_DIR with one agent, in one format and mode.

    Exit status: 0 every task succeeded; 1 some did not; 2 a usage or configuration error.
    """
    options = RunOptions(
        format=action_format.value,
        mode=mode.value,
        policy=policy,
        seed=seed,
        state_dir=default_state_dir() if state_dir is None else state_dir,
        inject=inject,
    )
    chosen = None if tasks is None else [t.strip() for t in tasks.split(",") if t.strip()]
    try:
        suite = load_suite(suite_dir)
        total = len(chosen) if chosen is not None else len(suite.tasks)
        if json_output:
            outcome = run_suite(
                suite,
                agent,
                options,
                task_ids=chosen,
                on_result=lambda r: typer.echo(json.dumps(r.to_json(), sort_keys=True)),
            )
            typer.echo(json.dumps(outcome.summary, sort_keys=True))
        else:
            with typer.progressbar(length=total, label=f"{suite.name}", file=None) as bar:
                outcome = run_suite(
                    suite, agent, options, task_ids=chosen, on_result=lambda r: bar.update(1)
                )
            typer.echo(_table(outcome.results))
            summary = outcome.summary
            typer.echo(
                f"{summary['succeeded']}/{summary['tasks']} succeeded · agent {agent} · "
                f"format {options.format} · mode {options.mode}"
            )
    except SafeExecError as exc:
        usage_error(str(exc))
    raise typer.Exit(0 if all(r.success for r in outcome.results) else 1)


def _table(results: tuple[TaskResult, ...]) -> str:
    head = ("task", "ok", "end", "turns", "calls", "invalid", "refusals", "unauthorized")
    rows = [head]
    for r in results:
        refused = sum(n for counts in r.refusals.values() for n in counts.values())
        unauthorized = sum(len(v) for v in r.unauthorized_effects.values() if isinstance(v, list))
        rows.append(
            (
                r.task,
                "yes" if r.success else "no",
                r.end_reason.value,
                str(r.turns),
                str(r.tool_calls),
                str(r.invalid_actions),
                str(refused),
                str(unauthorized),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows
    )
