"""The format's interface: tasks with tools, a prompt per action mode, a parser for
``Action:``/``Answer:`` replies, an answer check, and JSON/text actions run by the task."""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

ToolType = namedtuple("ToolType", ["name", "description", "function", "fn_signature"])


class ActionMode(Enum):
    TEXT_AS_ACTION = "text_as_action"
    JSON_AS_ACTION = "json_as_action"
    CODE_AS_ACTION = "code_as_action"


class Task:
    def __init__(
        self,
        name: str,
        tools: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        instruction: str,
        expected_output: Any,
        is_single_tool_task: bool = True,
    ) -> None:
        self.name = name
        self.tools = tools
        self.instruction = instruction
        self.expected_output = expected_output
        self.is_single_tool_task = is_single_tool_task
        self.reset()

    def reset(self) -> None:
        if callable(self.tools):
            self.tools = self.tools()

    def get_prompt(self, action_mode: ActionMode) -> str:
        listed = "\n".join(
            f"{n}: {t.description} ({t.fn_signature})" for n, t in self.tools.items()
        )
        return f"Tools:\n{listed}\nMode: {action_mode.value}\nInstruction: {self.instruction}"

    def parse_generation(self, generation: str) -> dict[str, Any]:
        if "Answer:" in generation and "Action:" in generation:
            return {"type": "invalid", "content": "Either 'Action:' or 'Answer:', not both."}
        if "Answer:" in generation:
            return {"type": "answer", "content": generation.split("Answer:")[1].strip()}
        if "Action:" in generation:
            action = generation.split("Action:")[1].split("End Action")[0]
            return {"type": "action", "content": action.strip()}
        return {"type": "invalid", "content": "Your output should contain 'Action:' or 'Answer:'"}

    def check_answer(self, answer: Any) -> bool:
        return str(answer).strip() == str(self.expected_output)

    def execute_action(self, action: str, action_mode: ActionMode) -> str:
        try:
            if action_mode is ActionMode.JSON_AS_ACTION:
                parsed = json.loads(action)
                name, args = parsed["tool"], parsed["args"]
            else:
                name, *args = [part.strip() for part in action.split(",")]
        except (ValueError, KeyError, TypeError) as exc:
            return f"Invalid action. Error: {exc}"
        if name not in self.tools:
            return f"Could not find tool with name {name}"
        try:
            return str(self.tools[name].function(*args))
        except Exception:  # the format's generic error: the cause is not shown
            return f"Failed to execute tool {name} with args {args}."


task_iterators: list[tuple[Iterable[Task], int]] = []


def register_task_iterator(tasks: Iterable[Task], length: int) -> None:
    task_iterators.append((tasks, length))
