"""The syntax tree's positional makers are their classes, faster."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from safeexec.dsl import nodes as n
from safeexec.model.values import span_at

MAKERS: dict[str, type] = {
    "make_assign": n.Assign, "make_binop": n.BinOp, "make_boolop": n.BoolOp, "make_call": n.Call,
    "make_compare": n.Compare, "make_cond": n.Cond, "make_expr_stmt": n.ExprStmt,
    "make_field": n.Field, "make_for": n.For, "make_fstring": n.FString, "make_if": n.If,
    "make_index": n.Index, "make_keyword": n.Keyword, "make_lambda": n.Lambda,
    "make_list": n.ListExpr, "make_literal": n.Literal, "make_name": n.Name, "make_neg": n.Neg,
    "make_not": n.Not, "make_record": n.RecordExpr, "make_return": n.Return,
}  # fmt: skip


def test_every_maker_is_listed() -> None:
    assert sorted(name for name in dir(n) if name.startswith("make_")) == sorted(MAKERS)


@pytest.mark.parametrize("maker", sorted(MAKERS))
def test_a_maker_makes_its_class_from_the_fields_in_order(maker: str) -> None:
    make: Callable[..., object] = getattr(n, maker)
    cls = MAKERS[maker]
    names = [f.name for f in dataclasses.fields(cls)]
    # A distinct value per field, so a maker that swapped two fields cannot pass.
    values = [span_at(i + 1, 1, i + 1, 2) for i in range(len(names))]
    made = make(*values)
    expected = cls(**dict(zip(names, values, strict=True)))
    assert type(made) is cls and made == expected and hash(made) == hash(expected)
    assert [getattr(made, name) for name in names] == values
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.span = values[0]  # type: ignore[attr-defined]
