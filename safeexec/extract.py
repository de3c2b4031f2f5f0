"""Find the Python code in a model's reply: fenced blocks, tool-call JSON, or the whole reply.

:func:`extract` never raises; a reply with no code (or malformed JSON, or only non-Python blocks)
gives an empty tuple. What counts as code, in order:

1. **Tool calls** — the whole reply (or a ```` ```json ```` block) is JSON carrying calls whose
   arguments hold ``code``: OpenAI ``{"name", "arguments"}`` (arguments a JSON string or object),
   ``{"tool_calls": [{"function": {...}}]}`` (or legacy ``function_call``), Anthropic
   ``{"type": "tool_use", "input": {...}}``, a list of those, or a message ``{"content": [...]}``
   (fenced blocks in its text parts count).
   A call whose arguments name a ``language`` other than Python is skipped.
2. **Fenced blocks** — ```` ``` ```` or ``~~~`` fences tagged ``python``/``py``/``python3``/``py3``,
   or untagged when the block parses as Python and does more than show names and literals. Any
   indentation; CommonMark's closing rule, and a backtick fence ending the last code line also
   closes; an unterminated last fence runs to the end.
3. **Raw code** — no fences and no JSON: the whole reply, when it parses as Python and does more
   than show names and literals (so "Done", "42", "[1, 2]" or "Answer: 42" are not code).

:func:`combine` joins one reply's Python actions into the single action the session runs.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Action, ActionSource

__all__ = ["combine", "extract"]

_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
_JSON_TAGS = frozenset({"json", "jsonc", "json5"})
_DSL_TAGS = frozenset({"dsl", "safeexec-dsl"})
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_INFO_TAG = re.compile(r"[\s{.]*([\w+#-]+)")
# Tool-call JSON is only ever a few levels deep; deeper structure is not searched.
_MAX_JSON_DEPTH = 8


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class _Block(Fieldwise):
    """One fenced block of a reply: its info string and its code."""

    info: str
    code: str


def extract(text: str) -> tuple[Action, ...]:
    """Return the code actions in a model reply, in order; empty when there is none."""
    try:
        return tuple(_extract(text))
    except Exception:  # a reply is untrusted data: whatever it holds, it is "no code", not a crash
        return ()


def combine(actions: tuple[Action, ...]) -> Action | None:
    """Join the Python actions of one reply into one action (blocks in order, a blank line apart).

    The result has the source of the first Python action and a fresh ``action_id``; a single
    action's code is kept byte for byte. ``None`` when there is no Python action.
    """
    python = [action for action in actions if action.language == "python"]
    if not python:
        # A reply of ```dsl blocks only: they are one DSL program, for the dsl mode.
        python = [action for action in actions if action.language == "dsl"]
    if not python:
        return None
    if len(python) == 1:
        code = python[0].code
    else:
        code = "\n".join(_ends_with_newline(action.code) for action in python)
    return Action.create(code, source=python[0].source, language=python[0].language)


def _extract(text: str) -> Iterator[Action]:
    if not isinstance(text, str):
        return
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        document = _load_json(stripped)
        if document is not _NOT_JSON:
            yield from _tool_call_actions(document, depth=0)
            return
    blocks = list(_fenced_blocks(text))
    if blocks:
        for block in blocks:
            yield from _block_actions(block)
        return
    if _looks_like_code(text):
        yield Action.create(text, source=ActionSource.RAW)


def _block_actions(block: _Block) -> Iterator[Action]:
    tag = _tag(block.info)
    if tag in _PYTHON_TAGS:
        if block.code.strip():
            yield Action.create(block.code, source=ActionSource.FENCED)
    elif tag in _DSL_TAGS:
        if block.code.strip():
            yield Action.create(block.code, source=ActionSource.FENCED, language="dsl")
    elif tag in _JSON_TAGS:
        document = _load_json(block.code)
        if document is not _NOT_JSON:
            yield from _tool_call_actions(document, depth=0)
    elif not tag and _looks_like_code(block.code):
        yield Action.create(block.code, source=ActionSource.FENCED)


def _fenced_blocks(text: str) -> Iterator[_Block]:
    """CommonMark-style fenced blocks; an unterminated last fence runs to the end of the text."""
    lines = _LINE_BREAK.split(text)
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        index += 1
        if opening is None:
            continue
        fence = opening.group("fence")
        info = opening.group("info").strip()
        if fence[0] == "`" and "`" in info:
            continue  # CommonMark: a backtick fence's info string has no backticks (inline code)
        indent = len(opening.group("indent"))
        body: list[str] = []
        while index < len(lines):
            line = lines[index]
            index += 1
            closing = _FENCE.match(line)
            if (
                closing is not None
                and closing.group("fence")[0] == fence[0]
                and len(closing.group("fence")) >= len(fence)
                and not closing.group("info").strip()
            ):
                break
            if fence[0] == "`" and line.rstrip().endswith(fence) and line.strip() != fence:
                # Models often close a block on the last code line (``print(x)```).
                body.append(_dedent(line.rstrip()[: -len(fence)], indent))
                break
            body.append(_dedent(line, indent))
        yield _Block(info=info, code=_trim_blank_lines(body))


def _tool_call_actions(value: object, *, depth: int) -> Iterator[Action]:
    """Actions from tool-call JSON in any of the supported shapes."""
    if depth > _MAX_JSON_DEPTH:
        return
    if isinstance(value, list):
        for item in value:
            yield from _tool_call_actions(item, depth=depth + 1)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("tool_calls"), list):
        yield from _tool_call_actions(value["tool_calls"], depth=depth + 1)
        return
    if isinstance(value.get("content"), list):
        yield from _tool_call_actions(value["content"], depth=depth + 1)
        return
    if isinstance(value.get("content"), str) and "role" in value:
        yield from _extract_text_block(value["content"])
        return
    if value.get("type") == "text" and isinstance(value.get("text"), str):
        yield from _extract_text_block(value["text"])
        return
    for key in ("function", "function_call"):  # a tool_calls entry; the legacy message field
        if isinstance(value.get(key), dict):
            yield from _tool_call_actions(value[key], depth=depth + 1)
            return
    if "name" not in value:
        return
    arguments = value.get("arguments", value.get("input"))
    if isinstance(arguments, str):
        arguments = _load_json(arguments)
    if not isinstance(arguments, dict):
        return
    code = arguments.get("code")
    language = arguments.get("language", "python")
    if (
        isinstance(code, str)
        and code.strip()
        and isinstance(language, str)
        and language.strip().lower() in _PYTHON_TAGS
    ):
        yield Action.create(code, source=ActionSource.TOOL_CALL)


def _extract_text_block(text: str) -> Iterator[Action]:
    """Code inside an Anthropic ``text`` content block: fenced blocks only, never raw prose."""
    for block in _fenced_blocks(text):
        yield from _block_actions(block)


class _NotJSON:
    __slots__ = ()


_NOT_JSON = _NotJSON()


def _load_json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _looks_like_code(text: str) -> bool:
    """True when ``text`` parses as Python and does something: not only bare names and literals
    (``42``, ``[1, 2]``, ``Done``) or annotations without a value (``Answer: 42``)."""
    if not text.strip():
        return False
    try:
        tree = ast.parse(text)
    except Exception:  # SyntaxError, null bytes, surrogates, recursion or stack limits
        return False
    return not all(_is_inert(statement) for statement in tree.body)


def _is_inert(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.AnnAssign):
        return statement.value is None and isinstance(statement.target, ast.Name)
    if not isinstance(statement, ast.Expr):
        return False
    pending: list[ast.AST] = [statement.value]  # iterative: a literal may be deeply nested
    while pending:
        node = pending.pop()
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            pending.extend(node.elts)
        elif isinstance(node, ast.Dict):
            pending.extend(key for key in node.keys if key is not None)
            pending.extend(node.values)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            pending.append(node.operand)
        elif not isinstance(node, ast.Name | ast.Constant):
            return False
    return True


def _tag(info: str) -> str:
    """The language tag of a fence's info string (``{.python title="x"}``, ``python:a.py``)."""
    match = _INFO_TAG.match(info)
    return match.group(1).lower() if match else ""


def _dedent(line: str, indent: int) -> str:
    """Remove up to ``indent`` leading spaces/tabs, as CommonMark does for an indented fence."""
    removable = len(line) - len(line.lstrip(" \t"))
    return line[min(indent, removable) :]


def _trim_blank_lines(lines: list[str]) -> str:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "".join(line + "\n" for line in lines[start:end])


def _ends_with_newline(code: str) -> str:
    return code if code.endswith("\n") else code + "\n"
