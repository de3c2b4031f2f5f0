"""Which fields of an ``ast`` node class can hold child nodes: the one table the tree walks share.

The parse step's size measure, the estimator and the scanner each walk every node of
``Parsed.tree``; reading a name's ``id`` or a constant's ``value`` on every node only to find a
string is most of what a walk costs in Python. CPython's grammar (its ASDL) gives those fields
builtin types (``identifier``, ``int``, ``string``, ``constant``), so they never hold a node in a
tree ``ast.parse`` built; every other field is kept, in ``_fields`` order, so a walk visits
exactly the nodes, and in the order, it would visit reading every field.
"""

from __future__ import annotations

__all__ = ["CHILD_FIELDS", "CHILD_FIELDS_NO_CONTEXT"]

# Fields the grammar types as a builtin scalar wherever they occur (``identifier``, ``int``,
# ``string``, ``constant``). Scalar lists (``Global.names``, ``MatchClass.kwd_attrs``) are not
# here: a walk's list handling already skips their strings.
_SCALAR_FIELDS = frozenset(
    {
        "id",
        "attr",
        "arg",
        "name",
        "asname",
        "module",
        "level",
        "kind",
        "conversion",
        "is_async",
        "simple",
        "type_comment",
        "rest",
        "tag",
        "lineno",
    }
)
# Where a field of the set above is a node after all: ``value`` everywhere but in a constant,
# and 3.12's ``type X = ...`` (``TypeAlias.name`` is a ``Name``).
_NODE_VALUED = frozenset({("TypeAlias", "name")})
_SCALAR_VALUE_CLASSES = frozenset({"Constant", "MatchSingleton"})


class _FieldTable(dict[type, tuple[str, ...]]):
    """``table[cls]``: the fields of ``cls`` that can hold nodes (filled on first use; a plain
    dict lookup after that, which is what a per-node walk can afford)."""

    def __init__(self, *, with_context: bool) -> None:
        super().__init__()
        self._with_context = with_context

    def __missing__(self, cls: type) -> tuple[str, ...]:
        # Not a node class (a forged tree holding None, say): AttributeError, as reading
        # ``_fields`` raises, so the walk crashes and the gate denies (SX900).
        fields: tuple[str, ...] = getattr(cls, "_fields")  # noqa: B009
        found = tuple(
            name
            for name in fields
            if (name not in _SCALAR_FIELDS or (cls.__name__, name) in _NODE_VALUED)
            and not (name == "value" and cls.__name__ in _SCALAR_VALUE_CLASSES)
            and (self._with_context or name != "ctx")
        )
        self[cls] = found
        return found


CHILD_FIELDS: dict[type, tuple[str, ...]] = _FieldTable(with_context=True)
"""``CHILD_FIELDS[cls]``: the fields of ``cls`` that can hold nodes, in ``_fields`` order."""
CHILD_FIELDS_NO_CONTEXT: dict[type, tuple[str, ...]] = _FieldTable(with_context=False)
"""The same without ``ctx`` (the ``Load``/``Store``/``Del`` marker), for walks that skip it."""
