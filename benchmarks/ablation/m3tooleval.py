"""M³ToolEval (the CodeAct paper's benchmark) run from a checkout the user points to, with the
paper's protocol, code actions executed by safeexec.

``python -m benchmarks.ablation.m3tooleval CHECKOUT --agent openai:MODEL`` reads the tasks of a
checkout of ``xingyaoww/code-act`` (its ``scripts/eval/m3tooleval/tasks`` package, or a directory
holding a ``tasks`` package of that format); nothing of it is copied here. The protocol is the
paper's: the task's own prompt for the action mode, at most 10 turns, the task's own parser for
``Action:``/``Answer:`` replies, a wrong answer met by "incorrect, try again" (several guesses),
a single-tool task done once an action's result checks, and JSON/text actions executed by the
task itself (its generic error messages). Code actions run in a safeexec session (``--mode``,
default ``restricted``) with the task's tools granted; the task's own ``check_answer`` judges.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from safeexec.capabilities.gateway import Effect, ToolSpec
from safeexec.harness.models import Message, Model, TurnKey
from safeexec.harness.suite import Task as HarnessTask
from safeexec.harness.task_grants import derive_policy
from safeexec.model.codec import JSONValue
from safeexec.model.values import ExecStatus
from safeexec.policy.loader import load_policy
from safeexec.session.session import Session

__all__ = ["ACTION_MODES", "TURNS", "M3Run", "load_tasks", "main", "run_m3"]

ACTION_MODES = {"code": "CODE_AS_ACTION", "json": "JSON_AS_ACTION", "text": "TEXT_AS_ACTION"}
TURNS = 10
_RETRY = (
    "Your answer is incorrect. Please try again. Note that you should ONLY output the answer "
    "(e.g., single number), without any other text."
)
_MARKS = re.compile(r"(Answer:|Action:)")
# A JSON Schema (in the subset the gateway validates) that accepts any JSON value.
_ANY: dict[str, JSONValue] = {
    "type": ["array", "boolean", "integer", "null", "number", "object", "string"]
}


def _package_dir(checkout: Path) -> Path:
    for candidate in (checkout, checkout / "scripts" / "eval" / "m3tooleval"):
        if (candidate / "tasks" / "__init__.py").is_file():
            return candidate / "tasks"
    raise FileNotFoundError(
        f"no M3ToolEval tasks package under {checkout} (looked for tasks/__init__.py there and "
        "under scripts/eval/m3tooleval/)"
    )


def load_tasks(checkout: Path) -> tuple[Any, list[Any]]:
    """The checkout's ``tasks`` package and every task it registers, in its order."""
    directory = _package_dir(Path(checkout))
    name = f"_m3tooleval_{abs(hash(str(directory.resolve())))}"
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {directory}")
    package = sys.modules.get(name)
    if package is None:
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
    iterators = package.base.task_iterators
    return package, [task for iterator, _length in iterators for task in iterator]


def _postprocess(generation: str) -> str:
    """Keep the reply up to its second ``Action:``/``Answer:`` (the paper's trimming)."""
    generation = generation.lstrip()
    marks = list(_MARKS.finditer(generation))
    if len(marks) <= 1:
        return generation
    trimmed = generation[: marks[1].start()].strip()
    start = trimmed.find("Action:") + len("Action:")
    end = trimmed.find("End Action", start)
    if end != -1:
        trimmed = trimmed[: end + len("End Action")].strip()
    thought = trimmed.find("Thought:", start)
    return trimmed[:thought].strip() if thought != -1 else trimmed


def _specs(tools: Mapping[str, Any]) -> list[ToolSpec]:
    """Each task tool as a spec taking its positional and keyword arguments as two values
    (M3ToolEval's tools are untyped and may take ``*args``); a prelude gives code the plain
    names."""
    return [
        ToolSpec(
            name=f"m3_{name}",
            description=str(tool.description),
            parameters={
                "type": "object",
                "properties": {
                    "args": {"type": "array", "items": _ANY},
                    "kwargs": {"type": "object", "additionalProperties": _ANY},
                },
                "required": ["args", "kwargs"],
                "additionalProperties": False,
            },
            effects=(Effect.READ,),  # the benchmark's tools compute; none has an effect
            function=_unpacked(tool.function),
        )
        for name, tool in tools.items()
    ]


def _unpacked(function: Callable[..., object]) -> Callable[..., object]:
    def call(args: list[JSONValue], kwargs: dict[str, JSONValue]) -> object:
        result = function(*args, **kwargs)
        return result if isinstance(result, str | int | float | bool | list | dict) else str(result)

    return call


def _prelude(tools: Mapping[str, Any]) -> str:
    return "\n".join(
        f"def {name}(*args, **kwargs):\n    return m3_{name}(list(args), dict(kwargs))"
        for name in tools
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class M3Run:
    """One task's run: its outcome by the task's own checker, turns and why it ended."""

    task: str
    action_mode: str
    correct: bool
    turns: int
    end_reason: str
    answers: int

    def to_json(self) -> dict[str, JSONValue]:
        return {
            "task": self.task,
            "action_mode": self.action_mode,
            "correct": self.correct,
            "turns": self.turns,
            "end_reason": self.end_reason,
            "answers": self.answers,
        }


def run_m3(
    package: Any, task: Any, model: Model, fmt: str, state_dir: Path, *, mode: str = "restricted"
) -> M3Run:
    """One task under the paper's protocol; code actions run in a fresh safeexec session."""
    action_mode = package.ActionMode[ACTION_MODES[fmt]]
    task.reset()
    messages = [Message(role="user", content=task.get_prompt(action_mode))]
    session = None
    if fmt == "code":
        specs = _specs(task.tools)
        stand_in = HarnessTask(id=str(task.name), scenario="m3tooleval", instruction="",
                               tools=tuple(s.name for s in specs), answer=None,
                               check={"kind": "exact"}, reference="")  # fmt: skip
        policy = derive_policy(load_policy("default"), stand_in, specs)
        session = Session(policy=policy, mode=mode, state_dir=state_dir)
        for spec in specs:
            session.grant(spec)
        session.run(_prelude(task.tools))
    correct, turns, answers, end = False, 0, 0, "limit"
    try:
        while not correct and turns < TURNS:
            key = TurnKey(task=str(task.name), format=fmt, turn=turns)
            generation = _postprocess(model.complete(messages, key=key).text)
            messages.append(Message(role="assistant", content=generation))
            turns += 1
            parsed = task.parse_generation(generation)
            extra = f"\n*Extra reminder: {parsed['extra_info']}" if parsed.get("extra_info") else ""
            if parsed["type"] == "action":
                result = _act(task, action_mode, parsed["content"], session, fmt)
                messages.append(Message(role="user", content=str(result) + extra))
                correct = bool(task.is_single_tool_task and task.check_answer(result))
            elif parsed["type"] == "answer":
                answers += 1
                correct = bool(task.check_answer(parsed["content"]))
                if not correct:
                    messages.append(Message(role="user", content=_RETRY + extra))
            else:
                messages.append(Message(role="user", content=str(parsed["content"])))
    finally:
        if session is not None:
            session.close()
    if correct:
        end = "correct"
    return M3Run(task=str(task.name), action_mode=fmt, correct=correct, turns=turns,
                 end_reason=end, answers=answers)  # fmt: skip


def _act(task: Any, action_mode: Any, action: str, session: Session | None, fmt: str) -> object:
    if fmt != "code" or session is None:
        return task.execute_action(action, action_mode)  # the task's own tools and errors
    outcome = session.run(action)
    result = outcome.result
    if result is not None and result.status is ExecStatus.OK:  # the output, as a REPL shows it
        shown = session.blobs.get(result.stdout).decode("utf-8", "replace").strip()
    else:  # what went wrong, as safeexec tells a model (refusals and errors included)
        shown = outcome.observation.text
    try:
        return ast.literal_eval(shown)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return shown


def _model(agent: str) -> Model:
    kind, _, rest = agent.partition(":")
    if kind == "openai" and rest:
        from safeexec.harness.openai_client import OpenAIModel

        return OpenAIModel(rest)
    raise SystemExit(f"--agent {agent!r}: use openai:MODEL (an OpenAI-compatible endpoint)")


def _runs(
    package: Any, tasks: Sequence[Any], model: Model, formats: Sequence[str], mode: str
) -> Iterator[M3Run]:
    with tempfile.TemporaryDirectory(prefix="safeexec-m3tooleval-") as scratch:
        for index, task in enumerate(tasks):
            for fmt in formats:
                yield run_m3(package, task, model, fmt, Path(scratch) / f"{index}-{fmt}", mode=mode)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.ablation.m3tooleval CHECKOUT``: run, print success per format."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path, help="a code-act checkout (or its m3tooleval dir)")
    parser.add_argument("--agent", required=True, help="openai:MODEL")
    parser.add_argument("--formats", default="code,json,text")
    parser.add_argument("--mode", default="restricted", help="safeexec mode for code actions")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks")
    parser.add_argument("--out", type=Path, default=None, help="write the runs as JSON lines")
    args = parser.parse_args(argv)
    package, tasks = load_tasks(args.checkout)
    formats = args.formats.split(",")
    runs = list(_runs(package, tasks[: args.limit], _model(args.agent), formats, args.mode))
    for fmt in formats:
        mine = [r for r in runs if r.action_mode == fmt]
        rate = sum(r.correct for r in mine) / len(mine) if mine else 0.0
        turns = sum(r.turns for r in mine) / len(mine) if mine else 0.0
        print(f"{fmt}: success {rate:.3f} over {len(mine)} tasks, {turns:.2f} turns")
    if args.out is not None:
        args.out.write_text("".join(json.dumps(r.to_json()) + "\n" for r in runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
