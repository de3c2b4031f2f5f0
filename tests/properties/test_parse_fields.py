"""The walks' field table leaves out only fields that never hold a node in a parsed tree."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings

from safeexec.parse.fields import CHILD_FIELDS, CHILD_FIELDS_NO_CONTEXT

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "corpus"))
from python_texts import python_corpus


def _nodes_in_left_out_fields(tree: ast.AST) -> list[str]:
    """``Class.field`` for each node (or list holding one) in a field the table leaves out."""
    found = []
    for node in ast.walk(tree):
        cls = type(node)
        kept = CHILD_FIELDS[cls]
        assert CHILD_FIELDS_NO_CONTEXT[cls] == tuple(f for f in kept if f != "ctx")
        for name in cls._fields:
            if name in kept:
                continue
            value = getattr(node, name, None)
            items = value if isinstance(value, list) else [value]
            if any(isinstance(item, ast.AST) for item in items):
                found.append(f"{cls.__name__}.{name}")
    return found


def _trees() -> list[ast.Module]:
    trees = []
    for text in python_corpus().values():
        try:
            trees.append(ast.parse(text))
        except (SyntaxError, ValueError):
            continue
    return trees


def test_the_table_keeps_every_field_that_holds_a_node_on_the_corpus() -> None:
    trees = _trees()
    assert len(trees) > 100
    assert [f for tree in trees for f in _nodes_in_left_out_fields(tree)] == []


@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_the_table_keeps_every_field_that_holds_a_node_on_generated_programs(
    program: str,
) -> None:
    assert _nodes_in_left_out_fields(ast.parse(program)) == []


def test_a_node_in_a_left_out_field_is_found() -> None:
    # The property above can fail: a node where the grammar has a string is reported.
    forged = ast.Module(body=[ast.Expr(ast.Name(id=ast.Name(id="x")))], type_ignores=[])
    assert _nodes_in_left_out_fields(forged) == ["Name.id"]


def test_fields_keep_their_order_and_drop_only_scalars() -> None:
    assert CHILD_FIELDS[ast.Call] == ("func", "args", "keywords")
    assert CHILD_FIELDS[ast.Attribute] == ("value", "ctx")
    assert CHILD_FIELDS_NO_CONTEXT[ast.Attribute] == ("value",)
    assert CHILD_FIELDS[ast.ImportFrom] == ("names",)  # a list of alias nodes
    assert CHILD_FIELDS[ast.Constant] == CHILD_FIELDS[ast.MatchSingleton] == ()


def test_a_class_that_is_not_a_node_has_no_table_entry() -> None:
    # A forged tree (None where a statement belongs) must crash the walk that meets it, so the
    # gate denies (SX900), as reading `_fields` directly did.
    with pytest.raises(AttributeError):
        CHILD_FIELDS[type(None)]
    assert type(None) not in CHILD_FIELDS
