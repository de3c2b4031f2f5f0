"""A lean driver for the grammar's own LALR tables: the accepted-program fast path of the parser.

Lark builds the tables, terminals and rule shapes from ``grammar.lark`` once; this module lexes and
drives them with a tight loop that hands each reduction straight to the tree builder, without
lark's generic lexer, token callbacks, parse-tree nodes or the second transform pass (about 3x less
work). It follows lark's own semantics: terminal order and keyword handling as lark's basic lexer,
a token the state cannot take retried as another terminal matching the same text (what lark's
contextual lexer does), the Python-style indenter, child filtering, ``?rule`` inlining, ``_rule``
splicing, and positions propagated as ``propagate_positions`` does.

It only ever answers "here is the tree" or "not here": on any text it cannot take it gives up
(:class:`NotTaken`) and the caller parses with lark itself, which makes every refusal and its
message. The tests compare both on every example and on generated programs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Tree
from lark.lexer import PatternRE, PatternStr, TerminalDef
from lark.parsers.lalr_analysis import Shift
from lark.tree import Meta

__all__ = ["FastParser", "NotTaken"]


_new_token = str.__new__


class NotTaken(Exception):
    """The fast path does not take this text; parse it with lark (which says why)."""


# A value's place: own start/end (line, column, end line, end column) and its container's (a
# parenthesised expression's container includes the parentheses), as lark's Meta keeps them.
_Pos = tuple[int, int, int, int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class _Splice:
    """The children of an inlined ``_rule`` (lark's helper rules for ``x*`` and ``[..]``)."""

    children: list[Any]


@dataclass(frozen=True, slots=True)
class _Reduction:
    origin: str
    size: int
    keep: tuple[tuple[int, bool], ...]  # (child index, splice it)
    name: str  # alias or rule name: the builder method or tree name
    inline_single: bool  # ``?rule`` without alias: one kept child stands for the node
    unit: bool  # ``?a: b``: the child stands for the node, its place unchanged


class FastParser:
    """Lexes and parses with ``lark``'s tables for one grammar; ``builder`` methods take
    ``(meta, *children)`` as a ``v_args(meta=True, inline=True)`` transformer's do."""

    def __init__(self, lark: Lark, *, indent_types: tuple[str, str, str], parens: Sequence[str],
                 closers: Sequence[str], tab_len: int) -> None:  # fmt: skip
        table = lark.parser.parser.parser.parse_table
        self._start_states: dict[str, int] = table.start_states
        self._end_states: dict[str, int] = table.end_states
        self._nl, self._indent, self._dedent = indent_types
        self._parens = frozenset(parens)
        self._closers = frozenset(closers)
        self._tab_len = tab_len
        self._ignore = frozenset(lark.lexer_conf.ignore)
        self._reductions: dict[Any, _Reduction] = {}
        for rule in lark.rules:
            keep = tuple(
                (i, not sym.is_term and sym.name.startswith("_"))
                for i, sym in enumerate(rule.expansion)
                if rule.options.keep_all_tokens
                or not (sym.is_term and getattr(sym, "filter_out", False))
            )
            inline_single = bool(rule.options.expand1 and not rule.alias)
            self._reductions[rule] = _Reduction(
                origin=rule.origin.name,
                size=len(rule.expansion),
                keep=keep,
                name=rule.alias or rule.origin.name,
                inline_single=inline_single,
                unit=inline_single and len(rule.expansion) == 1 and keep == ((0, False),),
            )
        # state -> terminal or rule name -> (shift: next state) | (reduce: the rule's shape)
        self._states: dict[int, dict[str, int | _Reduction]] = {
            state: {
                symbol: target if action is Shift else self._reductions[target]
                for symbol, (action, target) in actions.items()
            }
            for state, actions in table.states.items()
        }
        self._handlers: dict[tuple[type, str], Callable[..., Any] | None] = {}
        self._chains: dict[tuple[int, int, str], int] = {}
        self._scanner, self._keywords, self._full = _scanner(tuple(lark.terminals))
        self._alternatives: dict[str, tuple[str, ...]] = {}

    # -- lexing ---------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[Token]:
        """The token stream lark's lexer and indenter would make, as lark ``Token`` values."""
        out: list[Token] = []
        match = self._scanner.match
        keywords, ignore = self._keywords, self._ignore
        nl, indent_type, dedent_type = self._nl, self._indent, self._dedent
        parens, closers = self._parens, self._closers
        pos, line, line_start, depth = 0, 1, 0, 0
        levels = [0]
        end = len(text)
        while pos < end:
            m = match(text, pos)
            if m is None:
                raise NotTaken
            kind = m.lastgroup
            value = m.group()
            assert kind is not None
            column = pos - line_start + 1
            newlines = value.count("\n")
            start_line = line
            if newlines:
                line += newlines
                line_start = pos + value.rindex("\n") + 1
            pos = m.end()
            if kind in ignore:
                continue
            if kind in keywords:
                kind = keywords[kind].get(value, kind)
            # Token's own constructor is slow (it handles deprecated arguments); the same slots.
            token = _new_token(Token, value)
            token.type, token.value, token.start_pos = kind, value, m.start()
            token.line, token.column = start_line, column
            token.end_line, token.end_column, token.end_pos = line, pos - line_start + 1, pos
            if kind == nl:
                if depth > 0:
                    continue
                out.append(token)
                indent_str = value.rsplit("\n", 1)[1]
                width = indent_str.count(" ") + indent_str.count("\t") * self._tab_len
                if width > levels[-1]:
                    levels.append(width)
                    out.append(Token.new_borrow_pos(indent_type, indent_str, token))
                else:
                    while width < levels[-1]:
                        levels.pop()
                        out.append(Token.new_borrow_pos(dedent_type, indent_str, token))
                    if width != levels[-1]:
                        raise NotTaken
                continue
            out.append(token)
            if kind in parens:
                depth += 1
            elif kind in closers:
                depth -= 1
                if depth < 0:
                    raise NotTaken
        last = out[-1] if out else None
        while len(levels) > 1:
            levels.pop()
            out.append(
                Token.new_borrow_pos(dedent_type, "", last)
                if last is not None
                else Token(dedent_type, "", 0, 0, 0, 0, 0, 0)
            )
        return out

    def _retyped(self, token: Token, actions: dict[str, int | _Reduction]) -> Token:
        """``token`` as the first other terminal (in lark's order) that matches its whole text
        and that the state takes: what lark's contextual lexer picks there."""
        value = str(token)
        options = self._alternatives.get(value)
        if options is None:
            options = tuple(name for name, rx in self._full if rx.fullmatch(value))
            if len(self._alternatives) < 4096:
                self._alternatives[value] = options
        for name in options:
            if name != token.type and name in actions:
                return Token.new_borrow_pos(name, value, token)
        raise NotTaken

    # -- parsing --------------------------------------------------------------------------------

    def parse(self, text: str, start: str, builder: object) -> Any:
        """The builder's value for ``text`` parsed from rule ``start``; raises :class:`NotTaken`."""
        tokens = self._tokens(text)
        states = self._states
        end_state = self._end_states[start]
        stack = [self._start_states[start]]
        values: list[Any] = []
        places: list[_Pos | None] = []
        chains = self._chains
        last = tokens[-1] if tokens else None
        end = (
            Token.new_borrow_pos("$END", "", last)
            if last is not None
            else Token("$END", "", 0, 1, 1)
        )
        for token in (*tokens, end):
            while True:
                actions = states[stack[-1]]
                step = actions.get(token.type)
                if step is None:
                    if token is end:
                        raise NotTaken
                    token = self._retyped(token, actions)
                    step = actions[token.type]
                if type(step) is int:
                    if token is end:
                        raise NotTaken
                    stack.append(step)
                    values.append(token)
                    places.append(
                        (token.line, token.column, token.end_line, token.end_column) * 2  # type: ignore[arg-type]
                    )
                    break
                assert isinstance(step, _Reduction)
                if step.unit:
                    # Most reductions are a precedence level passing its operand up: each pops
                    # the top state and pushes a goto from the same state below, so the whole
                    # chain depends only on (below, top, lookahead) and is remembered.
                    key = (stack[-2], stack[-1], token.type)
                    top = chains.get(key)
                    if top is None:
                        top = chains[key] = self._unit_chain(key)
                    stack[-1] = top
                    if token is end and top == end_state:
                        return values[-1]
                    continue
                else:
                    size = step.size
                    if size:
                        children = values[-size:]
                        spots = places[-size:]
                        del stack[-size:]
                        del values[-size:]
                        del places[-size:]
                    else:
                        children, spots = [], []
                    value, place = self._reduce(step, children, spots, builder)
                    values.append(value)
                    places.append(place)
                goto = states[stack[-1]][step.origin]
                assert type(goto) is int
                stack.append(goto)
                if token is end and goto == end_state:
                    return values[-1]
        raise NotTaken  # pragma: no cover - the end token always settles the parse

    def _unit_chain(self, key: tuple[int, int, str]) -> int:
        """The top state after every unit reduction ``key``'s lookahead causes in a row."""
        below, top, lookahead = key
        states = self._states
        while True:
            step = states[top].get(lookahead)
            if not isinstance(step, _Reduction) or not step.unit:
                return top
            goto = states[below][step.origin]
            assert type(goto) is int
            top = goto

    def _reduce(
        self,
        r: _Reduction,
        children: list[Any],
        spots: list[_Pos | None],
        builder: object,
    ) -> tuple[Any, _Pos | None]:
        kept: list[Any] = []
        for i, splice in r.keep:
            if splice:
                kept.extend(children[i].children)
            else:
                kept.append(children[i])
        first = final = None
        for p in spots:
            if p is not None:
                first = p
                break
        if first is not None:
            for p in reversed(spots):
                if p is not None:
                    final = p
                    break
        if r.inline_single and len(kept) == 1 and len(r.keep) == 1 and not r.keep[0][1]:
            child = kept[0]
            own = spots[r.keep[0][0]]
            if own is None or first is None or final is None or isinstance(child, Token):
                return child, own
            # A node standing for its rule keeps its place and takes the rule's as container.
            return child, (*own[:4], first[4], first[5], final[6], final[7])
        place: _Pos | None = None
        if first is not None and final is not None:
            box = (first[4], first[5], final[6], final[7])
            place = (*box, *box)
        if r.name.startswith("_"):
            return _Splice(kept), place
        key = (type(builder), r.name)
        try:
            handler = self._handlers[key]
        except KeyError:
            handler = self._handlers[key] = _plain_method(type(builder), r.name)
        meta = Meta()
        if place is not None:
            meta.line, meta.column, meta.end_line, meta.end_column = place[:4]
            meta.empty = False
        if handler is None:
            return Tree(r.name, kept, meta), place
        return handler(builder, meta, *kept), place


def _plain_method(cls: type, name: str) -> Callable[..., Any] | None:
    """The function behind ``cls.name`` (unwrapped from lark's ``v_args``), or ``None``."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            return getattr(found, "base_func", found)  # type: ignore[no-any-return, unused-ignore]
    return None


def _scanner(
    terminals: Sequence[TerminalDef],
) -> tuple[re.Pattern[str], dict[str, dict[str, str]], tuple[tuple[str, re.Pattern[str]], ...]]:
    """One alternation of the terminals in lark's order, with the string terminals a regular
    one matches whole handled as its keywords (lark's ``_create_unless``)."""
    ordered = sorted(
        terminals,
        key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name),
    )
    keywords: dict[str, dict[str, str]] = {}
    embedded: set[str] = set()
    for regular in (t for t in ordered if isinstance(t.pattern, PatternRE)):
        whole = re.compile(regular.pattern.to_regexp())
        for literal in (t for t in ordered if isinstance(t.pattern, PatternStr)):
            if literal.priority != regular.priority:
                continue
            if whole.fullmatch(literal.pattern.value):
                keywords.setdefault(regular.name, {})[literal.pattern.value] = literal.name
                if set(literal.pattern.flags) <= set(regular.pattern.flags):
                    embedded.add(literal.name)
    for t in ordered:
        if t.pattern.flags:
            raise ValueError(f"terminal {t.name} has flags; the fast lexer does not handle them")
    master = re.compile(
        "|".join(
            f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in ordered if t.name not in embedded
        )
    )
    full = tuple((t.name, re.compile(t.pattern.to_regexp())) for t in ordered)
    return master, keywords, full
