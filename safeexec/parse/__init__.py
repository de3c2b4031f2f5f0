"""Parse an action with libcst *and* ``ast``; any failure or disagreement is a typed value.

:func:`parse` never raises for anything in ``Action.code``. It first derives the one text that is
checked and will run (``Parsed.code``): newlines normalised to ``\\n``, a leading BOM and trailing
whitespace stripped (the text ends in one newline), and identifiers rewritten to their NFKC form,
as CPython binds them (``ｅｘｅｃ`` *is* ``exec``). Callers must run ``Parsed.code``, never
``Action.code``.

A failure is a deny finding of one of the engine's parse rules (documented in
:mod:`safeexec.policy.engine_rules`): ``SX001 syntax-error`` (with CPython's own message even if
libcst would accept the code), ``SX002 input-too-large``, ``SX003 parser-mismatch``, ``SX004
nesting-too-deep`` and ``SX005 invalid-encoding``.

Where libcst runs (a design decision, issue 18). Every rule, the estimate and the qualified-name
resolution read CPython's own tree (``Parsed.tree``), the tree that is compiled and run; no rule
reads a concrete syntax tree. So libcst's tree proves something only where the two parsers are
known to read the same text differently, and the cross-check (libcst parses, reprints the text
and has CPython's statement outline; identifiers are NFKC where the token rewrite could not reach)
runs only on text in those classes: any character outside printable ASCII, tab and newline (form
feeds in indents, non-NFKC identifiers, control characters), a backslash line continuation, or a
number literal glued to a name (``1in x``, ``0x1for``), which CPython's tokenizer splits and
libcst's rejects. Plain text skips it: libcst's parse alone was 0.75-0.97x bandit's whole
scan, and ``check`` 1.26x (60 lines) and 1.40x (600 lines) bandit in-process; without it 0.53x
and 0.56x (benchmarks/bench_check.py, same run each). ``always_cross_check=True`` runs it on
every text (the corpora's differential test holds the two paths to the same findings). SX001's
message and caret come from CPython, never libcst, whichever path runs.

One module per job: this one (the entry point, the size and encoding checks, CPython's parse and
compile, the nesting and work limits, the identifier rewrite), ``cross_check`` (libcst's
cross-check) and ``result`` (the values returned, and a failure's span and caret).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import unicodedata
import warnings

from safeexec._support.collector import gc_paused
from safeexec.model.values import Action, Span
from safeexec.parse.cross_check import _concrete_check, _parsers_may_differ
from safeexec.parse.fields import CHILD_FIELDS
from safeexec.parse.parsed import (
    Parsed,
    ParseFailure,
    _caret,
    _char_column,
    _fail,
    _fail_at,
    _lines,
    _point,
    _span,
)
from safeexec.policy.engine_rules import (
    INPUT_TOO_LARGE,
    INVALID_ENCODING,
    NESTING_TOO_DEEP,
    PARSER_MISMATCH,
    SYNTAX_ERROR,
)

__all__ = ["ParseFailure", "Parsed", "parse"]


_SURROGATE = re.compile("[\ud800-\udfff]")
_CHAIN_TYPES = frozenset({ast.BoolOp, ast.Constant, ast.JoinedStr})
# PEP 263, as CPython's tokenizer reads it; checked on the first two lines whatever line 1 holds
# (stricter than CPython, which only looks at line 2 after a comment or blank line).
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_UTF8_NAMES = frozenset({"utf-8", "utf8"})
# One string literal, spelled with the tokenizer's own patterns: each stops at the first closing
# quote, so a full match is exactly one token. A single-quoted one stays on its line (a
# backslash-newline inside, or anything else, is tokenized).
_ONE_LITERAL = re.compile(
    tokenize.StringPrefix
    + "(?:"
    + "|".join(
        (
            "'''" + tokenize.Single3,
            '"""' + tokenize.Double3,
            r"'[^\n'\\]*(?:\\.[^\n'\\]*)*'",
            r'"[^\n"\\]*(?:\\.[^\n"\\]*)*"',
        )
    )
    + ")"
)
# libcst spends about as long on a blank or comment line as on four units of node depth.
_WORK_PER_LINE = 4


def parse(
    action: Action,
    *,
    max_source_bytes: int = 1_000_000,
    max_nesting: int = 200,
    max_parse_work: int = 400_000,
    always_cross_check: bool = False,
) -> Parsed | ParseFailure:
    """Parse ``action.code`` with CPython's parser, and libcst where needed; never raises.

    ``max_nesting`` bounds the depth of CPython's syntax tree and ``max_parse_work`` the work
    libcst would do (see ``SX002``); both are measured before libcst sees the code. libcst's
    cross-check runs on text the parsers are known to read differently (see the module
    docstring), or on every text with ``always_cross_check``.
    """
    with gc_paused():
        return _parse(
            action,
            max_source_bytes=max_source_bytes,
            max_nesting=max_nesting,
            max_parse_work=max_parse_work,
            always_cross_check=always_cross_check,
        )


def _parse(
    action: Action,
    *,
    max_source_bytes: int,
    max_nesting: int,
    max_parse_work: int,
    always_cross_check: bool,
) -> Parsed | ParseFailure:
    code = action.code
    if len(code) > max_source_bytes or _utf8_length(code) > max_source_bytes:
        size = _utf8_length(code)
        return _fail(
            action,
            INPUT_TOO_LARGE,
            f"source is {size:,} bytes, above the limit of {max_source_bytes:,} bytes; "
            "send a smaller action or move data into a file",
        )
    surrogate = _SURROGATE.search(code)
    if surrogate is not None:
        return _fail_at(
            action, code, INVALID_ENCODING, _surrogate_message(surrogate.group()), surrogate.start()
        )
    code = code.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    # Trailing whitespace means nothing to CPython (unless a backslash continues the last line),
    # and libcst mishandles it (drops comments before it).
    trimmed = code.rstrip(" \t\f\n")
    if not trimmed.endswith("\\"):
        code = trimmed + "\n" if trimmed else ""
    cookie = _foreign_cookie(code)
    if cookie is not None:
        line, name = cookie
        return _fail(
            action,
            INVALID_ENCODING,
            f"coding cookie {name!r} is not allowed; the source is UTF-8, remove the cookie",
            span=Span(
                start_line=line,
                start_column=1,
                end_line=line,
                end_column=max(1, len(_lines(code)[line - 1])),
            ),
            evidence=_lines(code)[line - 1],
        )
    null = code.find("\0")
    if null >= 0:
        return _fail_at(action, code, SYNTAX_ERROR, "source code cannot contain null bytes", null)

    # CPython's parser and compiler warn about some valid code (``'\d'``, ``x is 1``). Under a
    # host's ``-W error`` those warnings would become syntax errors, so the verdict would depend
    # on the host; they are ignored here, as the sandbox ignores them when it runs the code.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree_or_failure = _cpython_parse(action, code)
        if isinstance(tree_or_failure, ParseFailure):
            return tree_or_failure
        tree = tree_or_failure
        too_costly = _measure_tree(
            action, code, tree, max_nesting=max_nesting, max_work=max_parse_work
        )
        if too_costly is not None:
            return too_costly
        rejected = _compiler_rejects(action, code, tree)
        if rejected is not None:
            return rejected
        # An NFKC-normal text has only NFKC-normal identifiers (each starts at a starter), so
        # the token rewrite and the check of libcst's names are needed only when it is not.
        needs_normalising = not code.isascii() and not unicodedata.is_normalized("NFKC", code)
        if needs_normalising:
            normalised = _normalise_identifiers(action, code, tree)
            if isinstance(normalised, ParseFailure):
                return normalised
            code, tree = normalised
    if not always_cross_check and not _parsers_may_differ(code):
        return Parsed(action=action, code=code, tree=tree)
    return _concrete_check(action, code, tree, needs_normalising=needs_normalising)


def _cpython_parse(action: Action, code: str) -> ast.Module | ParseFailure:
    try:
        return ast.parse(code, filename="<action>")
    except SyntaxError as exc:  # includes IndentationError and TabError
        column = exc.offset or 1
        return _syntax_failure(action, code, exc, column, exc.end_offset or column)
    except (RecursionError, MemoryError):
        # CPython's parser signals its own stack limit with these, not with a SyntaxError.
        return _fail(
            action,
            NESTING_TOO_DEEP,
            "expression nesting is too deep for the Python parser; split it into "
            "named intermediate steps",
        )
    except Exception as exc:
        return _fail(action, SYNTAX_ERROR, f"{type(exc).__name__}: {exc}")


def _syntax_failure(
    action: Action, code: str, exc: SyntaxError, column: int, end_column: int
) -> ParseFailure:
    """SX001 for a SyntaxError, given its (character) start and end columns."""
    line = exc.lineno or 1
    end_line = exc.end_lineno or line
    return _fail(
        action,
        SYNTAX_ERROR,
        exc.msg or "invalid syntax",
        span=_span(code, line, column, end_line, end_column),
        evidence=_caret(code, line, column, end_line, end_column),
    )


def _compiler_rejects(action: Action, code: str, tree: ast.Module) -> ParseFailure | None:
    """Errors CPython only raises after parsing (``return`` outside a function, bad ``nonlocal``).

    Compiling does not run anything; the code object is discarded. Its error columns are UTF-8
    byte offsets, unlike the parser's, so they are converted to characters.
    """
    try:
        compile(tree, "<action>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = _char_column(code, line, (exc.offset or 1) - 1)
        end_column = _char_column(code, exc.end_lineno or line, (exc.end_offset or 1) - 1)
        return _syntax_failure(action, code, exc, column, end_column)
    except (RecursionError, MemoryError):
        return _fail(
            action,
            NESTING_TOO_DEEP,
            "the code is nested too deeply for the Python compiler; split it into named steps",
        )
    except Exception as exc:
        return _fail(action, SYNTAX_ERROR, f"{type(exc).__name__}: {exc}")
    return None


def _measure_tree(
    action: Action, code: str, tree: ast.Module, *, max_nesting: int, max_work: int
) -> ParseFailure | None:
    """Walk CPython's tree level by level (no recursion), stopping at the first limit crossed.

    A node's depth counts the nesting libcst builds where CPython's tree is flat: ``a and b and
    c`` and adjacent string literals (``"a" "b" "c"``) are chains in libcst. Such a node lifts
    itself and everything below it (``lift``, by node id; rare, so the common path stays a
    plain list comprehension).
    """
    lines = _lines(code)
    work = _WORK_PER_LINE * len(lines)
    lift: dict[int, int] = {}
    inside_fstring: set[int] = set()
    level: list[ast.AST] = [tree]
    depth = 0
    while level:
        depth += 1
        following: list[ast.AST] = []
        for node in level:
            kind = type(node)
            if kind in _CHAIN_TYPES:
                if id(node) not in inside_fstring:
                    extra = _flat_chain_length(node, lines)
                    if extra:
                        lift[id(node)] = lift.get(id(node), 0) + extra
                if isinstance(node, ast.JoinedStr):
                    # An f-string's parts carry the whole literal's position (3.11): not re-counted.
                    inside_fstring.update(id(part) for part in node.values)
            # ast.iter_child_nodes, inlined: this loop visits every node of the tree.
            for field in CHILD_FIELDS[kind]:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    following.append(value)
                elif isinstance(value, list):
                    following += [item for item in value if isinstance(item, ast.AST)]
        lifted = [node for node in level if id(node) in lift] if lift else []
        deepest = max(lifted, key=lambda node: lift[id(node)], default=None)
        highest = depth + (lift[id(deepest)] if deepest is not None else 0)
        work += depth * len(level) + sum(lift[id(node)] for node in lifted)
        if work > max_work:
            return _fail(
                action,
                INPUT_TOO_LARGE,
                f"the code is too large to check: its parse work is above {max_work:,} "
                "(max_parse_work, the sum of syntax-tree node depths plus "
                f"{_WORK_PER_LINE} per line); send a smaller action",
            )
        if highest > max_nesting:
            where = deepest or next((n for n in level if isinstance(n, ast.expr | ast.stmt)), None)
            span = None
            if isinstance(where, ast.expr | ast.stmt):
                column = _char_column(code, where.lineno, where.col_offset)
                span = _point(code, where.lineno, column)
            return _fail(
                action,
                NESTING_TOO_DEEP,
                f"the syntax tree is nested more than {max_nesting} levels deep "
                "(max_nesting); split the expression into named intermediate steps",
                span=span,
                evidence="" if span is None else _caret(code, span.start_line, span.start_column),
            )
        for node in lifted:
            for child in ast.iter_child_nodes(node):
                lift[id(child)] = lift[id(node)]
        level = following
    return None


def _flat_chain_length(node: ast.AST, lines: list[str]) -> int:
    """Extra levels libcst nests for a node CPython keeps flat (0 for most nodes)."""
    if isinstance(node, ast.BoolOp):
        return max(0, len(node.values) - 2)
    if isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str | bytes)
    ):
        if node.lineno == node.end_lineno and (node.end_col_offset or 0) - node.col_offset < 64:
            return 0  # one line of under 64 bytes, so under 64 characters: see below
        segment = _segment(lines, node)
        if "\n" not in segment and len(segment) < 64:
            return 0  # too short to hold enough literals to matter
        return max(0, _string_literal_count(segment) - 1)
    return 0


def _segment(lines: list[str], node: ast.expr) -> str:
    """The source text of ``node`` (ast's columns are UTF-8 byte offsets)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    start, end = node.col_offset, node.end_col_offset or 0
    if first == last:
        return lines[first].encode("utf-8")[start:end].decode("utf-8", "replace")
    head = lines[first].encode("utf-8")[start:].decode("utf-8", "replace")
    tail = lines[last].encode("utf-8")[:end].decode("utf-8", "replace")
    return "\n".join([head, *lines[first + 1 : last], tail])


def _string_literal_count(segment: str) -> int:
    """How many adjacent string literals make up ``segment`` (``"a" "b"`` is 2)."""
    if _ONE_LITERAL.fullmatch(segment):
        return 1  # a long docstring, say: no need to run the (pure Python) tokenizer
    tokens = tokenize.generate_tokens(io.StringIO(f"({segment}\n)").readline)
    try:
        return sum(1 for token in tokens if token.type == tokenize.STRING)
    except (tokenize.TokenError, SyntaxError):
        return 1


def _normalise_identifiers(
    action: Action, code: str, tree: ast.Module
) -> tuple[str, ast.Module] | ParseFailure:
    """Rewrite each NAME token to NFKC, as CPython binds it, and prove the tree did not change."""
    lines = code.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                normal = unicodedata.normalize("NFKC", token.string)
                if normal != token.string:
                    edits.append((token.start[0], token.start[1], token.end[1], normal))
    except Exception as exc:  # tokenize disagreeing with CPython's parser: fail closed
        return _fail(
            action,
            PARSER_MISMATCH,
            f"the identifier scan failed where CPython's parser did not: {exc}; "
            "write identifiers in ASCII",
        )
    if not edits:
        return code, tree
    for line, start, end, normal in reversed(edits):
        text = lines[line - 1]
        lines[line - 1] = text[:start] + normal + text[end:]
    normalised = "".join(lines)
    try:
        renormalised_tree = ast.parse(normalised, filename="<action>")
    except Exception:
        renormalised_tree = None
    if renormalised_tree is None or ast.dump(renormalised_tree) != ast.dump(tree):
        return _fail(
            action,
            PARSER_MISMATCH,
            "rewriting identifiers to the form CPython binds (NFKC) changed the meaning "
            "of the code; write identifiers in ASCII",
        )
    return normalised, renormalised_tree


def _foreign_cookie(code: str) -> tuple[int, str] | None:
    for number, line in enumerate(_lines(code)[:2], start=1):
        match = _COOKIE.match(line)
        if match is not None:
            name = match.group(1).lower().replace("_", "-")
            if name not in _UTF8_NAMES:
                return number, match.group(1)
    return None


def _surrogate_message(char: str) -> str:
    point = ord(char)
    if 0xDC80 <= point <= 0xDCFF:
        return (
            f"invalid UTF-8 byte 0x{point - 0xDC00:02X} in the source; "
            "send the code as valid UTF-8 text"
        )
    return f"lone surrogate U+{point:04X} cannot be encoded as UTF-8; remove it"


def _utf8_length(code: str) -> int:
    if code.isascii():
        return len(code)
    return len(code.encode("utf-8", "surrogatepass"))
