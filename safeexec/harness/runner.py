"""Run a suite's tasks with one agent and summarise: what ``safeexec agent run`` calls.

``agent`` is a scripted agent name (``oracle``, ``noisy``, ``gullible``, ``adversarial``),
``replay:FILE`` (a recording) or ``openai:MODEL`` (an OpenAI-compatible endpoint at
``OPENAI_BASE_URL``, through the ``openai`` SDK of the ``model`` extra; its replies are recorded
automatically to ``<state_dir>/recordings/<suite>-<format>.jsonl``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from safeexec.errors import ConfigurationError
from safeexec.harness.agents import AGENTS, make_agent
from safeexec.harness.formats import TurnFault
from safeexec.harness.loop import RunOptions, TaskResult, run_task
from safeexec.harness.models import Model, RecordingModel, ReplayModel
from safeexec.harness.suite import Suite, Task
from safeexec.model.codec import JSONValue

__all__ = ["SuiteRun", "model_for", "run_suite", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SuiteRun:
    """Every task's result and the summary of them."""

    results: tuple[TaskResult, ...]
    summary: dict[str, JSONValue]


def model_for(agent: str, suite: Suite, options: RunOptions) -> Callable[[Task], Model]:
    """The per-task model factory that ``agent`` names."""
    if agent in AGENTS:
        return lambda task: make_agent(agent, suite, task, options)
    kind, _, rest = agent.partition(":")
    if kind == "replay" and rest:
        replay = ReplayModel(Path(rest))
        return lambda task: replay
    if kind == "openai" and rest:
        from safeexec.harness.openai_model import OpenAIModel

        path = Path(options.state_dir) / "recordings" / f"{suite.name}-{options.format}.jsonl"
        recorded = RecordingModel(OpenAIModel(rest), path)
        return lambda task: recorded
    raise ConfigurationError(
        f"agent {agent!r} is unknown; use one of {', '.join(AGENTS)}, replay:FILE or openai:MODEL"
    )


def run_suite(
    suite: Suite,
    agent: str,
    options: RunOptions,
    *,
    task_ids: Sequence[str] | None = None,
    on_result: Callable[[TaskResult], None] | None = None,
) -> SuiteRun:
    """Run the chosen tasks (all when ``task_ids`` is ``None``) in suite order."""
    tasks = list(suite.tasks)
    if task_ids is not None:
        known = {t.id for t in tasks}
        unknown = [i for i in task_ids if i not in known]
        if unknown:
            raise ConfigurationError(f"tasks {unknown} are not in suite {suite.name!r}")
        tasks = [t for t in tasks if t.id in set(task_ids)]
    factory = model_for(agent, suite, options)
    results = []
    for task in tasks:
        result = run_task(suite, task, factory(task), options)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return SuiteRun(results=tuple(results), summary=summarize(results, agent=agent))


def summarize(results: Sequence[TaskResult], *, agent: str = "") -> dict[str, JSONValue]:
    """Totals over task results: successes, end reasons, turns, calls, faults by class (security
    refusals: the policy's and the guards' only), refusals, effects."""
    ends = Counter(r.end_reason.value for r in results)
    faults: Counter[str] = Counter()
    for result in results:
        faults.update(result.faults)
    succeeded = len([r for r in results if r.success])
    refusals: Counter[str] = Counter()
    for result in results:
        for stage, counts in result.refusals.items():
            for key, n in counts.items():
                refusals[f"{stage}:{key}"] += n
    unauthorized = sum(
        len(found)
        for r in results
        for found in r.unauthorized_effects.values()
        if isinstance(found, list)
    )
    times: dict[str, float] = {}
    for result in results:
        for name, seconds in result.time_s.items():
            times[name] = times.get(name, 0.0) + seconds
    return {
        "summary": True,
        "agent": agent,
        "tasks": len(results),
        "succeeded": succeeded,
        "success_rate": round(succeeded / len(results), 4) if results else 0.0,
        "end_reasons": dict(ends),
        "turns": sum(r.turns for r in results),
        "tool_calls": sum(r.tool_calls for r in results),
        "invalid_actions": sum(r.invalid_actions for r in results),
        "faults": dict(faults),
        "security_refusals": faults[TurnFault.POLICY_REFUSAL] + faults[TurnFault.GUARD_REFUSAL],
        "refusals": dict(refusals),
        "unauthorized_effects": unauthorized,
        "time_s": {k: round(v, 6) for k, v in times.items()},
    }
