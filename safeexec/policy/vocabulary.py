"""The closed vocabulary a policy may use: match kinds, their fields and placeholders, check names.

The analysis layer implements every name listed here (a test pins that the two agree); a policy
names checks by these registered names only, never by a Python import path.
"""

from __future__ import annotations

from types import MappingProxyType

from safeexec.policy.engine_rules import ENGINE_RULES

__all__ = [
    "CHECKS",
    "ENGINE_RULE_IDS",
    "ESTIMATE_BOUNDS",
    "ESTIMATE_METRICS",
    "MATCH_FIELDS",
    "MATCH_PLACEHOLDERS",
    "SYNTAX_NODE_TYPES",
    "reserved_rule_id",
]

# Fields each `match` kind accepts (besides `kind`).
MATCH_FIELDS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "import": frozenset({"allow", "deny"}),
        "call": frozenset({"names"}),
        "attribute": frozenset({"names"}),
        "name": frozenset({"names"}),
        "node": frozenset({"names"}),
        "estimate": frozenset({"metric", "above", "bound"}),
    }
)

# Placeholders a rule's message may use, per match kind.
MATCH_PLACEHOLDERS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "import": frozenset({"module"}),
        "call": frozenset({"name"}),
        "attribute": frozenset({"attribute"}),
        "name": frozenset({"name"}),
        "node": frozenset({"node"}),
        "estimate": frozenset({"metric", "value", "above", "reason"}),
    }
)

# Registered code checks (``check = "<name>"``) and the placeholders each one fills.
CHECKS: MappingProxyType[str, frozenset[str]] = MappingProxyType(
    {
        "dynamic-attribute-name": frozenset({"function"}),
        "dynamic-import": frozenset({"function"}),
        "path-outside-workdir": frozenset({"path", "function"}),
        "module-reexport": frozenset({"name", "module"}),
        "tool-not-granted": frozenset({"tool"}),
        "tool-call-limit": frozenset({"tool", "calls", "max_calls"}),
        "tool-requires-approval": frozenset({"tool"}),
        "string-annotation-code": frozenset({"annotation"}),
        "dynamic-format-template": frozenset({"method"}),
        "module-mutation": frozenset({"name"}),
        "module-as-value": frozenset({"name"}),
        "attribute-name-argument": frozenset({"name", "function"}),
        "object-namespace-dict": frozenset({"name"}),
        "timed-code-string": frozenset({"function"}),
    }
)

ESTIMATE_METRICS = frozenset({"cpu", "memory", "output", "tool_calls"})
ESTIMATE_BOUNDS = frozenset({"unbounded", "unknown"})

# Every syntax node type the engine knows (Python 3.11 grammar). The scanner's grammar gate denies
# any other node type (default deny over the grammar); a `node` rule may forbid any of these.
SYNTAX_NODE_TYPES = frozenset(
    {
        "Module",
        "Interactive",
        "Expression",
        "FunctionType",
        "FunctionDef",
        "AsyncFunctionDef",
        "ClassDef",
        "Return",
        "Delete",
        "Assign",
        "AugAssign",
        "AnnAssign",
        "For",
        "AsyncFor",
        "While",
        "If",
        "With",
        "AsyncWith",
        "Match",
        "Raise",
        "Try",
        "TryStar",
        "Assert",
        "Import",
        "ImportFrom",
        "Global",
        "Nonlocal",
        "Expr",
        "Pass",
        "Break",
        "Continue",
        "BoolOp",
        "NamedExpr",
        "BinOp",
        "UnaryOp",
        "Lambda",
        "IfExp",
        "Dict",
        "Set",
        "ListComp",
        "SetComp",
        "DictComp",
        "GeneratorExp",
        "Await",
        "Yield",
        "YieldFrom",
        "Compare",
        "Call",
        "FormattedValue",
        "JoinedStr",
        "Constant",
        "Attribute",
        "Subscript",
        "Starred",
        "Name",
        "List",
        "Tuple",
        "Slice",
        "Load",
        "Store",
        "Del",
        "And",
        "Or",
        "Add",
        "Sub",
        "Mult",
        "MatMult",
        "Div",
        "Mod",
        "Pow",
        "LShift",
        "RShift",
        "BitOr",
        "BitXor",
        "BitAnd",
        "FloorDiv",
        "Invert",
        "Not",
        "UAdd",
        "USub",
        "Eq",
        "NotEq",
        "Lt",
        "LtE",
        "Gt",
        "GtE",
        "Is",
        "IsNot",
        "In",
        "NotIn",
        "comprehension",
        "ExceptHandler",
        "arguments",
        "arg",
        "keyword",
        "alias",
        "withitem",
        "match_case",
        "MatchValue",
        "MatchSingleton",
        "MatchSequence",
        "MatchMapping",
        "MatchClass",
        "MatchStar",
        "MatchAs",
        "MatchOr",
        "TypeIgnore",
    }
)

# Ids the engine and other pipeline stages raise themselves (the catalogue in engine_rules); a
# pack may not declare them.
ENGINE_RULE_IDS = frozenset(rule.id for rule in ENGINE_RULES)


def reserved_rule_id(rule_id: str) -> bool:
    """Whether ``rule_id`` belongs to the engine (SX0xx parse, SX510/SX520, SX65x network, SX7xx
    DSL, SX9xx)."""
    return rule_id in ENGINE_RULE_IDS or rule_id.startswith(("SX0", "SX65", "SX7", "SX9"))
