"""DSL text → DSL tree through CPython's own parser (``ast.parse``, at C speed), for the programs
whose Python parse is exactly their DSL parse; ``None`` for every other text.

The DSL's surface is a subset of Python's, so a DSL program is also a Python module. The
conversion takes a node only in a shape the grammar has (``grammar.lark`` stays the syntax) and
checks in the text what Python's tree does not keep: no parentheses where the DSL wants a bare
name or string (``(f)(x)``, ``(x) = 1``, ``{("k"): v}``, ``f((lambda x: x))``), one statement
per line (no ``;``, no body on the header's line), ``elif`` as written, literals spelt as the
grammar's terminals (no ``0x1``, ``1_0``, ``"a" "b"``, ``r""``, ``\\x41``), names as written (no
NFKC folding). Spans are computed as lark's ``propagate_positions`` makes them, inclusive ends,
and a block ends where the newline token after its last simple statement ends.

It never decides a refusal: on ``None`` the caller parses with lark, the reference, which
makes every finding. A text is handed to lark unparsed when cheap checks say CPython might
read it differently (a backslash outside the escapes the grammar has, a tab in indentation, a
control character). Tests compare both front ends on generated programs, their mutations and
Python programs.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from safeexec.dsl import nodes as n
from safeexec.dsl.literals import fstring_parts, terminal, unescape
from safeexec.model.values import Span, span_at

__all__ = ["expression_from_python", "program_from_python"]

ParseExpression = Callable[..., n.Expr]

# Text CPython may read differently from the grammar (or warn about): a backslash not starting
# an escape the grammar has (line continuations, ``\d``), a tab in indentation (Python and the
# indenter count tabs differently), control characters but newline and tab (``\f``, ``\r``,
# ``\v``), a number run into a keyword (``1if``, a SyntaxWarning). Four searches, the first two
# only when their character is there at all: one pattern with four alternatives tried at every
# character cost several times more.
_BAD_BACKSLASH = re.compile(r"\\(?![\\\"'nt])")
_INDENT_TAB = re.compile(r"^ *\t", re.M)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_NUMBER_KEYWORD = re.compile(r"[0-9](?:and|else|for|if|in|is|not|or)")


def _hand_to_lark(text: str) -> bool:
    """Whether ``text`` has something CPython may read differently from the grammar."""
    return (
        ("\\" in text and _BAD_BACKSLASH.search(text) is not None)
        or ("\t" in text and _INDENT_TAB.search(text) is not None)
        or _CONTROL.search(text) is not None
        or _NUMBER_KEYWORD.search(text) is not None
    )


_GAP = r"(?:[ \t\n]|#[^\n]*)*"  # what may sit between two tokens: space, newlines, comments
_CLOSE_PARENS = re.compile(rf"(?:{_GAP}\))*")
_ITEM_GAP = re.compile(rf"(?:[ \t\n)]|#[^\n]*)*,{_GAP}")  # `) ,` before a bare key or lambda
_OPEN_GAP = re.compile(rf"{_GAP}\({_GAP}")  # a call's own `(` and nothing else
_KEYWORD_GAP = re.compile(rf"{_GAP}={_GAP}")
_HEADER_END = re.compile(r"(?:[ \t\n)]|#[^\n]*)*:[ \t]*(?:#[^\n]*)?\n")
_LINE_END = re.compile(r"[ \t]*(?:#[^\n]*)?\n")
_NEWLINE_TOKEN = re.compile(r"[ \t]*(?:\n[ \t]*|#[^\n]*)+")  # lark's _NL after WS_INLINE
_LAMBDA_COLON = re.compile(rf"{_GAP}:")

_ARITH = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
}  # fmt: skip
_AUG = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}
_COMPARE = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in",
}  # fmt: skip


_Located = ast.expr | ast.stmt | ast.keyword | ast.arg


class _NotDsl(Exception):
    """This Python tree has a shape the DSL lacks, or text the tree does not show."""


def program_from_python(text: str, parse_expression: ParseExpression) -> n.Program | None:
    """The program ``text`` holds, built from CPython's parse, or ``None`` (then ask lark).

    ``text`` has ``\\n`` line ends; ``parse_expression`` parses f-string parts."""
    if _hand_to_lark(text):
        return None
    try:
        module = ast.parse(text)
        body = _Converter(text, parse_expression, (1, 1)).block(module.body)
    except Exception:  # not taken (a shape the DSL lacks, an f-string part it refuses): lark
        return None
    return n.Program(body=body, source=text)


def expression_from_python(
    text: str, parse_expression: ParseExpression, *, line: int, column: int
) -> n.Expr | None:
    """The one-line expression ``text`` holds, placed at ``line``/``column``, or ``None``."""
    stripped = text.lstrip(" ")
    column += len(text) - len(stripped)
    if "\n" in text or _hand_to_lark(stripped):
        return None
    try:
        tree = ast.parse(stripped, mode="eval")
        return _Converter(stripped, parse_expression, (line, column)).expr(tree.body)
    except Exception:  # not taken: lark decides
        return None


class _Converter:
    def __init__(self, text: str, parse_expression: ParseExpression, offset: tuple[int, int]):
        self.text = text + "\n"  # what lark parses: the program and a final newline
        self.lines = text.split("\n")
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)
        self.ascii = text.isascii()
        self.parse_expression = parse_expression
        self.line, self.column = offset
        self.names: set[str] = set()  # names already found to be DSL NAMEs
        # CPython's columns are UTF-8 bytes: for ASCII text at the program's own origin a node's
        # span is its position as it stands (the common case, so it skips the offset arithmetic).
        self.direct = self.ascii and offset == (1, 1)

    # -- positions ------------------------------------------------------------------------------

    def _char_column(self, line: int, byte_column: int) -> int:
        """CPython's UTF-8 byte column as a character column (0-based)."""
        return len(self.lines[line - 1].encode()[:byte_column].decode())

    def _at(self, line: int, column: int) -> tuple[int, int]:
        if line == 1:
            return self.line, self.column + column - 1
        return self.line + line - 1, column

    def _start(self, node: _Located) -> int:
        """The text offset where ``node`` starts."""
        line = node.lineno
        if self.ascii:
            return self.starts[line - 1] + node.col_offset
        return self.starts[line - 1] + self._char_column(line, node.col_offset)

    def _end(self, node: _Located) -> int:
        """The text offset just past ``node``."""
        line = node.end_lineno or node.lineno
        if self.ascii:
            return self.starts[line - 1] + (node.end_col_offset or 0)
        return self.starts[line - 1] + self._char_column(line, node.end_col_offset or 0)

    def _place(self, offset: int) -> tuple[int, int]:
        """``offset`` as lark's (line, 1-based column)."""
        line = bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def _span(self, start: int, end: int) -> Span:
        """The span from offset ``start`` to just before offset ``end`` (lark's meta, as the
        reference builder turns it into an inclusive span)."""
        start_line, start_column = self._place(start)
        end_line, end_column = self._place(end)
        first = self._at(start_line, start_column)
        last = self._at(end_line, max(1, end_column - 1))
        return span_at(first[0], first[1], last[0], last[1])

    def _node_span(self, node: _Located) -> Span:
        if self.direct:  # an end column is never negative: ``or 1`` is ``max(1, ... or 0)``
            line = node.lineno
            return span_at(
                line, node.col_offset + 1, node.end_lineno or line, node.end_col_offset or 1
            )
        return self._span(self._start(node), self._end(node))

    def _expect(self, pattern: re.Pattern[str], start: int, end: int | None = None) -> int:
        """The end of ``pattern`` matched at ``start`` (exactly up to ``end`` when given)."""
        found = (
            pattern.match(self.text, start)
            if end is None
            else pattern.fullmatch(self.text, start, end)
        )
        if found is None:
            raise _NotDsl
        return found.end()

    def _container_end(self, node: _Located) -> int:
        """Just past ``node`` and the closing parentheses wrapped around it."""
        return self._expect(_CLOSE_PARENS, self._end(node))

    def _name(self, name: str, start: int) -> str:
        """``name`` as written at ``start`` (CPython folds identifiers with NFKC), a DSL NAME."""
        if not self.text.startswith(name, start):
            raise _NotDsl
        if name not in self.names:  # a name is matched against the grammar's NAME once
            if not _NAME.fullmatch(name):
                raise _NotDsl
            self.names.add(name)
        return name

    # -- statements -----------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt]) -> tuple[n.Stmt, ...]:
        return tuple([self.stmt(s) for s in stmts])

    def _own_line(self, node: ast.stmt) -> int:
        """``node`` starts its line (only indentation before it); its start offset."""
        start = self._start(node)
        line_start = self.starts[node.lineno - 1]
        if self.text[line_start:start].strip(" "):
            raise _NotDsl
        return start

    def stmt(self, s: ast.stmt) -> n.Stmt:
        start = self._own_line(s)
        if isinstance(s, ast.For):
            return self.for_stmt(s, start)
        if isinstance(s, ast.If):
            return self.if_stmt(s, start)
        end = self._end(s)
        self._expect(_LINE_END, end)  # nothing after it on its line but a comment (no `;`)
        span = self._node_span(s)
        if isinstance(s, ast.Assign):
            (target,) = s.targets
            name = self._target(target, start)
            return n.make_assign(name, self.expr(s.value), "", span)
        if isinstance(s, ast.AugAssign):
            op = _AUG.get(type(s.op))
            if op is None:
                raise _NotDsl
            name = self._target(s.target, start)
            return n.make_assign(name, self.expr(s.value), op, span)
        if isinstance(s, ast.Return) and s.value is not None:
            return n.make_return(self.expr(s.value), span)
        if isinstance(s, ast.Expr):
            return n.make_expr_stmt(self.expr(s.value), span)
        raise _NotDsl

    def _target(self, target: ast.expr, start: int) -> str:
        """An assignment's bare target name, first on the line (``(x) = 1`` is not DSL)."""
        if not isinstance(target, ast.Name) or self._start(target) != start:
            raise _NotDsl
        return self._name(target.id, start)

    def for_stmt(self, s: ast.For, start: int) -> n.For:
        target = s.target
        if not isinstance(target, ast.Name) or s.orelse or s.type_comment:
            raise _NotDsl
        var_start = self._start(target)
        if self.text[start + 3 : var_start].strip(" "):  # `for (x) in`
            raise _NotDsl
        var = self._name(target.id, var_start)
        iterable = self.expr(s.iter)
        self._expect(_HEADER_END, self._end(s.iter))
        body = self.block(s.body)
        return n.make_for(var, iterable, body, self._block_span(start, s))

    def if_stmt(self, s: ast.If, start: int, *, clause: bool = False) -> n.If:
        """An ``if`` statement, or (``clause``) an ``elif`` clause, whose span ends with its
        own block (the grammar's ``elif_clause``), not with the clauses after it."""
        test = self.expr(s.test)
        self._expect(_HEADER_END, self._end(s.test))
        body = self.block(s.body)
        orelse: tuple[n.Stmt, ...] = ()
        if s.orelse:
            first = s.orelse[0]
            first_start = self._own_line(first)
            if isinstance(first, ast.If) and self.text.startswith("elif", first_start):
                orelse = (self.if_stmt(first, first_start, clause=True),)
            else:
                orelse = self.block(s.orelse)
        span = self._block_span(start, s.body[-1] if clause else s)
        return n.make_if(test, body, orelse, span)

    def _block_span(self, start: int, s: ast.stmt) -> Span:
        """From the keyword to where the newline token after the last simple statement in ``s``
        ends (where lark's closing dedent is placed)."""
        last = s
        while isinstance(last, (ast.For, ast.If)):
            last = (last.orelse or last.body)[-1]
        return self._span(start, self._expect(_NEWLINE_TOKEN, self._end(last)))

    # -- expressions ----------------------------------------------------------------------------

    def expr(self, e: ast.expr) -> n.Expr:
        convert = _EXPRESSIONS.get(type(e))
        if convert is None:
            raise _NotDsl
        made: n.Expr = convert(self, e)
        return made

    def name(self, e: ast.Name) -> n.Name:
        return n.make_name(self._name(e.id, self._start(e)), self._node_span(e))

    def attribute(self, e: ast.Attribute) -> n.Field:
        end = self._end(e)
        name = self._name(e.attr, end - len(e.attr))
        return n.make_field(self.expr(e.value), name, self._node_span(e))

    def subscript(self, e: ast.Subscript) -> n.Index:
        value, index = self.expr(e.value), self.expr(e.slice)
        return n.make_index(value, index, self._node_span(e))

    def binop(self, e: ast.BinOp) -> n.BinOp:
        op = _ARITH.get(type(e.op))
        if op is None:
            raise _NotDsl
        left, right = self.expr(e.left), self.expr(e.right)
        return n.make_binop(op, left, right, self._node_span(e))

    def compare(self, e: ast.Compare) -> n.Compare:
        if len(e.ops) != 1:
            raise _NotDsl  # chained
        op = _COMPARE.get(type(e.ops[0]))
        if op is None:
            raise _NotDsl
        left, right = self.expr(e.left), self.expr(e.comparators[0])
        return n.make_compare(op, left, right, self._node_span(e))

    def unary(self, e: ast.UnaryOp) -> n.Neg | n.Not:
        if isinstance(e.op, ast.USub):
            return n.make_neg(self.expr(e.operand), self._node_span(e))
        if isinstance(e.op, ast.Not):
            return n.make_not(self.expr(e.operand), self._node_span(e))
        raise _NotDsl

    def conditional(self, e: ast.IfExp) -> n.Cond:
        body, test, orelse = self.expr(e.body), self.expr(e.test), self.expr(e.orelse)
        return n.make_cond(test, body, orelse, self._node_span(e))

    def list_expr(self, e: ast.List) -> n.ListExpr:
        return n.make_list(tuple([self.expr(x) for x in e.elts]), self._node_span(e))

    def constant(self, e: ast.Constant) -> n.Literal:
        start, end = self._start(e), self._end(e)
        written = self.text[start:end]
        value = e.value
        kind = type(value)
        if kind is str and _STRING.fullmatch(written):
            literal: n.LiteralValue = unescape(written[1:-1])
        elif kind is int and _INT.fullmatch(written):
            literal = int(written)
        elif kind is float and _FLOAT.fullmatch(written):
            literal = float(written)
        elif (value is True or value is False or value is None) and written == str(value):
            literal = value
        else:
            raise _NotDsl
        return n.make_literal(literal, self._node_span(e))

    def fstring(self, e: ast.expr) -> n.FString:
        start, end = self._start(e), self._end(e)
        written = self.text[start:end]
        if not _FSTRING.fullmatch(written):
            raise _NotDsl
        line, column = self._at(*self._place(start))
        parts = fstring_parts(written[2:-1], line, column + 2, self.parse_expression)
        return n.make_fstring(tuple(parts), self._node_span(e))

    def boolop(self, e: ast.BoolOp) -> n.BoolOp:
        """CPython's flat ``a or b or c`` as the grammar's left-nested pairs, each inner pair
        ending after its right operand's parentheses."""
        op = "and" if isinstance(e.op, ast.And) else "or"
        start = self._start(e)
        values = e.values
        left: n.Expr = self.expr(values[0])
        for i, value in enumerate(values[1:], start=1):
            end = self._end(e) if i == len(values) - 1 else self._container_end(value)
            left = n.make_boolop(op, left, self.expr(value), self._span(start, end))
        assert isinstance(left, n.BoolOp)
        return left

    def record(self, e: ast.Dict) -> n.RecordExpr:
        keys: list[str] = []
        after = self._start(e) + 1  # just past `{`
        for i, key in enumerate(e.keys):
            if not isinstance(key, ast.Constant) or type(key.value) is not str:
                raise _NotDsl  # `**spread`, a computed key
            key_start = self._start(key)
            gap = _GAP_RE if i == 0 else _ITEM_GAP
            self._expect(gap, after, key_start)  # a bare string key, no `(` before it
            written = self.text[key_start : self._end(key)]
            if not _STRING.fullmatch(written):
                raise _NotDsl
            keys.append(unescape(written[1:-1]))
            after = self._end(e.values[i])
        values = tuple([self.expr(v) for v in e.values])
        return n.make_record(tuple(keys), values, self._node_span(e))

    def call(self, e: ast.Call) -> n.Call:
        func = e.func
        start = self._start(e)
        if not isinstance(func, ast.Name) or self._start(func) != start:
            raise _NotDsl  # a method, a called call, `(f)(x)`
        name = self._name(func.id, start)
        args: list[n.Expr | n.Lambda] = []
        for i, arg in enumerate(e.args):
            if isinstance(arg, ast.Lambda):  # only bare: `f((lambda x: x))` is not DSL
                after = self._end(e.args[i - 1] if i else func)
                self._expect(_OPEN_GAP if i == 0 else _ITEM_GAP, after, self._start(arg))
                args.append(self.lambda_expr(arg))
            else:
                args.append(self.expr(arg))
        keywords: list[n.Keyword] = []
        for k in e.keywords:
            if k.arg is None:
                raise _NotDsl  # `**kwargs`
            k_start = self._start(k)
            keyword_name = self._name(k.arg, k_start)
            value = k.value
            if isinstance(value, ast.Lambda):
                self._expect(_KEYWORD_GAP, k_start + len(keyword_name), self._start(value))
                argument: n.Expr | n.Lambda = self.lambda_expr(value)
            else:
                argument = self.expr(value)
            keywords.append(n.make_keyword(keyword_name, argument, self._node_span(k)))
        return n.make_call(name, tuple(args), tuple(keywords), self._node_span(e))

    def lambda_expr(self, e: ast.Lambda) -> n.Lambda:
        a = e.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults or not a.args:
            raise _NotDsl
        params = tuple(self._name(p.arg, self._start(p)) for p in a.args)
        self._expect(_LAMBDA_COLON, self._end(a.args[-1]))  # no trailing comma: `lambda x,: x`
        return n.make_lambda(params, self.expr(e.body), self._node_span(e))


_NAME = terminal("NAME")
_INT = terminal("INT")
_FLOAT = terminal("FLOAT")
_STRING = terminal("STRING")
_FSTRING = terminal("FSTRING")
_GAP_RE = re.compile(_GAP)


# Each Python expression node the DSL has, by its exact type; any other is not DSL.
_EXPRESSIONS: dict[type, Callable[[_Converter, Any], n.Expr]] = {
    ast.Name: _Converter.name,
    ast.Constant: _Converter.constant,
    ast.Call: _Converter.call,
    ast.Attribute: _Converter.attribute,
    ast.Subscript: _Converter.subscript,
    ast.BinOp: _Converter.binop,
    ast.Compare: _Converter.compare,
    ast.BoolOp: _Converter.boolop,
    ast.UnaryOp: _Converter.unary,
    ast.IfExp: _Converter.conditional,
    ast.List: _Converter.list_expr,
    ast.Dict: _Converter.record,
    ast.JoinedStr: _Converter.fstring,
}
