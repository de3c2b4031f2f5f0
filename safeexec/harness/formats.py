"""Action formats: how tools are shown to a model, how its reply becomes one action, and how the
observation goes back.

- ``code``: fenced Python, run whole through :meth:`Session.run`; tools are functions.
- ``json``: exactly one native tool call per turn (OpenAI shape), name checked against the offered
  tools, arguments a JSON object; the capability layer validates them against the schema.
- ``text``: one ``Action: tool(arg=value, ...)`` line per turn, values JSON/Python literals only
  (never evaluated), positional values bound in the schema's parameter order.
- ``dsl``: a program in the safeexec DSL (``dsl/SPEC.md``), run whole in the ``dsl`` mode.

Every format finishes one way: the ``submit(value)`` tool, or for ``text`` an ``Answer:`` line.
A reply that is no action says which :class:`TurnFault` it is (no code or call, an unknown tool,
a malformed call); the loop classifies what the session refused.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from safeexec.capabilities.gateway import ToolSpec
from safeexec.capabilities.specs import hint_text
from safeexec.harness.models import Message, Reply
from safeexec.model.codec import JSONValue

__all__ = [
    "FORMATS",
    "ActionFormat",
    "ActionKind",
    "CodeFormat",
    "DslFormat",
    "JsonFormat",
    "ParsedAction",
    "TextFormat",
    "TurnFault",
    "render_signature",
]

SUBMIT = "submit"


class ActionKind(StrEnum):
    CODE = "code"
    CALL = "call"
    ANSWER = "answer"
    INVALID = "invalid"


class TurnFault(StrEnum):
    """What went wrong in one turn. The first four are the model's mistakes; only the last two
    are security decisions (the policy's gate or capabilities, the runtime's guards)."""

    SYNTAX_ERROR = "syntax_error"
    NO_CODE = "no_code"  # no code block, no call, no answer: nothing to act on
    UNKNOWN_TOOL = "unknown_tool"
    MALFORMED_CALL = "malformed_call"  # unreadable arguments, or refused by the tool's schema
    POLICY_REFUSAL = "policy_refusal"
    GUARD_REFUSAL = "guard_refusal"

    @property
    def security(self) -> bool:
        return self in (TurnFault.POLICY_REFUSAL, TurnFault.GUARD_REFUSAL)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedAction:
    """One turn's action: code to run, one tool call, a final answer, or why it is invalid
    (``fault`` says which kind of invalid)."""

    kind: ActionKind
    code: str = ""
    tool: str = ""
    arguments: Mapping[str, JSONValue] = field(default_factory=dict)
    answer: JSONValue = None
    error: str = ""
    fault: TurnFault | None = None

    def to_json(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"kind": self.kind.value}
        if self.kind is ActionKind.CODE:
            out["code"] = self.code
        elif self.kind is ActionKind.CALL:
            out["tool"] = self.tool
            out["arguments"] = dict(self.arguments)
        elif self.kind is ActionKind.ANSWER:
            out["answer"] = self.answer
        else:
            out["error"] = self.error
            out["fault"] = None if self.fault is None else self.fault.value
        return out


class ActionFormat(Protocol):
    """One way for a model to act; see the module docstring."""

    name: str
    mode: str | None
    """The execution mode the format needs (``None``: any)."""

    def instructions(self, specs: Sequence[ToolSpec]) -> str: ...

    def native_tools(self, specs: Sequence[ToolSpec]) -> list[dict[str, JSONValue]]: ...

    def parse(self, reply: Reply, specs: Sequence[ToolSpec]) -> ParsedAction: ...

    def feedback(self, reply: Reply, observation: str) -> list[Message]: ...


def render_signature(spec: ToolSpec) -> str:
    """``name(param: type = default, ...)`` from the spec's JSON Schema."""
    properties = spec.parameters.get("properties")
    parts = []
    for name, schema in (properties if isinstance(properties, dict) else {}).items():
        if not isinstance(schema, dict):
            continue
        text = f"{name}: {hint_text(schema)}"
        if "default" in schema:
            text += f" = {json.dumps(schema['default'])}"
        parts.append(text)
    return f"{spec.name}({', '.join(parts)})"


def _tool_docs(specs: Sequence[ToolSpec]) -> str:
    lines = []
    for spec in specs:
        effects = ", ".join(e.value for e in spec.effects) or "none"
        lines.append(f"- {render_signature(spec)}  [effects: {effects}]")
        if spec.description:
            lines.extend(f"    {line}" for line in spec.description.splitlines())
    return "\n".join(lines)


class CodeFormat:
    """Fenced Python; the whole reply goes to :meth:`Session.run` (the session extracts it)."""

    name = "code"
    mode: str | None = None

    def instructions(self, specs: Sequence[ToolSpec]) -> str:
        return (
            "Act by writing Python in one fenced block (```python ... ```) per reply. The code "
            "runs in a sandbox; these functions are defined in it (they raise ToolError when a "
            "call is refused):\n"
            f"{_tool_docs(specs)}\n"
            "You see what the code prints. Finish by calling submit(value) with the answer."
        )

    def native_tools(self, specs: Sequence[ToolSpec]) -> list[dict[str, JSONValue]]:
        return []

    def parse(self, reply: Reply, specs: Sequence[ToolSpec]) -> ParsedAction:
        if not reply.text.strip():
            return ParsedAction(
                kind=ActionKind.INVALID, error="the reply was empty", fault=TurnFault.NO_CODE
            )
        return ParsedAction(kind=ActionKind.CODE, code=reply.text)

    def feedback(self, reply: Reply, observation: str) -> list[Message]:
        return [
            Message(role="assistant", content=reply.text),
            Message(role="user", content=f"Observation:\n{observation}"),
        ]


class DslFormat(CodeFormat):
    """A safeexec DSL program in a ```dsl fence, run whole through :meth:`Session.run` in the
    ``dsl`` mode (the session extracts and checks it); only the instructions differ from code."""

    name = "dsl"
    mode: str | None = "dsl"

    def instructions(self, specs: Sequence[ToolSpec]) -> str:
        return (
            "Act by writing one program in the safeexec DSL in a fenced block (```dsl ... ```) "
            "per reply. The DSL reads like a small Python: assignments, `for x in list:`, `if`, "
            'tool calls with keyword arguments only, records and lists, `x["key"]`, lambdas '
            "only as op arguments, and ops such as map, filter, sort_by, min_by, max_by, count, "
            "sum, group, join, take, len, print. There is no def, while, import, try or method "
            "call. Tools:\n"
            f"{_tool_docs(specs)}\n"
            "You see what the program prints. Finish by calling submit(value=...) with the answer."
        )


class JsonFormat:
    """One native function call per turn."""

    name = "json"
    mode: str | None = None

    def instructions(self, specs: Sequence[ToolSpec]) -> str:
        return (
            "Act by calling exactly one of the provided functions per reply. You see each "
            "function's result. Finish by calling submit(value) with the answer."
        )

    def native_tools(self, specs: Sequence[ToolSpec]) -> list[dict[str, JSONValue]]:
        return [
            {"name": s.name, "description": s.description, "parameters": dict(s.parameters)}
            for s in specs
        ]

    def parse(self, reply: Reply, specs: Sequence[ToolSpec]) -> ParsedAction:
        if len(reply.tool_calls) != 1:
            return ParsedAction(
                kind=ActionKind.INVALID,
                error=f"expected exactly one function call, got {len(reply.tool_calls)}",
                fault=TurnFault.MALFORMED_CALL if reply.tool_calls else TurnFault.NO_CODE,
            )
        (call,) = reply.tool_calls
        if call.name not in {s.name for s in specs}:
            return ParsedAction(
                kind=ActionKind.INVALID,
                error=f"no function named {call.name[:80]!r}; call one of the provided functions",
                fault=TurnFault.UNKNOWN_TOOL,
            )
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as exc:
            return ParsedAction(
                kind=ActionKind.INVALID,
                error=f"the arguments are not valid JSON: {exc}",
                fault=TurnFault.MALFORMED_CALL,
            )
        if not isinstance(arguments, dict):
            return ParsedAction(
                kind=ActionKind.INVALID,
                error="the arguments must be a JSON object",
                fault=TurnFault.MALFORMED_CALL,
            )
        return ParsedAction(kind=ActionKind.CALL, tool=call.name, arguments=arguments)

    def feedback(self, reply: Reply, observation: str) -> list[Message]:
        out = [Message(role="assistant", content=reply.text, tool_calls=reply.tool_calls)]
        if not reply.tool_calls:
            return [*out, Message(role="user", content=observation)]
        # Every call id needs an answer, even those of a rejected multi-call turn.
        return out + [
            Message(role="tool", content=observation, tool_call_id=c.id) for c in reply.tool_calls
        ]


_DIRECTIVE = re.compile(r"^\s*(Action|Answer)\s*:\s*(.*?)\s*$", re.MULTILINE)


class TextFormat:
    """``Action: tool(arg=value)`` lines; ``Answer: value`` finishes."""

    name = "text"
    mode: str | None = None

    def instructions(self, specs: Sequence[ToolSpec]) -> str:
        shown = [s for s in specs if s.name != SUBMIT]
        return (
            "Act with exactly one line per reply of the form\n"
            "Action: tool_name(argument=value, ...)\n"
            "with values written as JSON literals. Tools:\n"
            f"{_tool_docs(shown)}\n"
            "You see each tool's result. When you know the answer, reply with one line\n"
            "Answer: <the answer, as JSON if it is a number, list or object>"
        )

    def native_tools(self, specs: Sequence[ToolSpec]) -> list[dict[str, JSONValue]]:
        return []

    def parse(self, reply: Reply, specs: Sequence[ToolSpec]) -> ParsedAction:
        match = _DIRECTIVE.search(reply.text)
        if match is None:
            return ParsedAction(
                kind=ActionKind.INVALID,
                error="no 'Action: tool(...)' or 'Answer: ...' line in the reply",
                fault=TurnFault.NO_CODE,
            )
        word, rest = match.groups()
        if word == "Answer":
            try:
                answer: JSONValue = json.loads(rest)
            except ValueError:
                answer = rest
            return ParsedAction(kind=ActionKind.ANSWER, answer=answer)
        return parse_call(rest, {s.name: s for s in specs if s.name != SUBMIT})

    def feedback(self, reply: Reply, observation: str) -> list[Message]:
        return [
            Message(role="assistant", content=reply.text),
            Message(role="user", content=f"Observation:\n{observation}"),
        ]


def parse_call(text: str, specs: Mapping[str, ToolSpec]) -> ParsedAction:
    """Parse ``tool(arg=value, ...)`` with literal values only; positional values bind in order."""

    def invalid(why: str, fault: TurnFault = TurnFault.MALFORMED_CALL) -> ParsedAction:
        return ParsedAction(
            kind=ActionKind.INVALID, error=f"cannot read the action: {why}", fault=fault
        )

    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return invalid(f"{type(exc).__name__}: {exc}")
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return invalid("write it as tool_name(argument=value, ...)")
    spec = specs.get(node.func.id)
    if spec is None:
        return invalid(
            f"no tool named {node.func.id!r}; use one of {sorted(specs)}", TurnFault.UNKNOWN_TOOL
        )
    properties = spec.parameters.get("properties")
    order = list(properties) if isinstance(properties, dict) else []
    if len(node.args) > len(order):
        return invalid(f"{spec.name} takes at most {len(order)} values")
    arguments: dict[str, JSONValue] = {}
    try:
        for name, value in zip(order, node.args, strict=False):
            arguments[name] = _literal(value)
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg in arguments:
                return invalid("each argument must be named once (no ** and no repeats)")
            arguments[keyword.arg] = _literal(keyword.value)
    except ValueError as exc:
        return invalid(str(exc))
    return ParsedAction(kind=ActionKind.CALL, tool=spec.name, arguments=arguments)


_NAMED = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _literal(node: ast.expr) -> JSONValue:
    """A JSON value from a literal expression; anything else (names, calls, ...) is refused."""
    if isinstance(node, ast.Constant) and (
        node.value is None or isinstance(node.value, str | int | float)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMED:
        return _NAMED[node.id]
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float)
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, JSONValue] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise ValueError("object keys must be strings")
            out[key.value] = _literal(value)
        return out
    raise ValueError(f"values must be literals, not {type(node).__name__} expressions")


FORMATS: Mapping[str, ActionFormat] = {
    "code": CodeFormat(),
    "json": JsonFormat(),
    "text": TextFormat(),
    "dsl": DslFormat(),
}
