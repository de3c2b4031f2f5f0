"""Authorized effects match the arguments a call really carried, as the gateway passes them on."""

from __future__ import annotations

from safeexec.harness.suite import AuthorizedEffect


def test_an_integer_constraint_matches_the_float_a_number_parameter_arrives_as() -> None:
    effect = AuthorizedEffect(tool="pay", args={"amount": 1100, "to": "DE1"})
    assert effect.matches("pay", {"amount": 1100.0, "to": "DE1"})
    assert effect.matches("pay", {"amount": [1100.0][0], "to": "DE1"})
    assert not effect.matches("pay", {"amount": 1100.5, "to": "DE1"})


def test_booleans_are_not_numbers_and_containers_compare_item_by_item() -> None:
    assert not AuthorizedEffect(tool="t", args={"flag": 1}).matches("t", {"flag": True})
    assert not AuthorizedEffect(tool="t", args={"flag": True}).matches("t", {"flag": 1})
    nested = AuthorizedEffect(tool="t", args={"rows": [{"n": 2}, {"n": 3}]})
    assert nested.matches("t", {"rows": [{"n": 2.0}, {"n": 3}]})
    assert not nested.matches("t", {"rows": [{"n": 2}]})
    assert not nested.matches("t", {"rows": [{"n": 2}, {"m": 3}]})
    assert not AuthorizedEffect(tool="t", args={"s": "1"}).matches("t", {"s": 1})


def test_in_constraints_use_the_same_equality() -> None:
    effect = AuthorizedEffect(tool="t", args={"n": {"in": [1, 2]}})
    assert effect.matches("t", {"n": 2.0})
    assert not effect.matches("t", {"n": 3.0})


def test_within_constraints_take_a_name_or_a_list_of_names_all_listed() -> None:
    effect = AuthorizedEffect(tool="mail", args={"to": {"within": ["Bob@x.org", "alice@x.org"]}})
    assert effect.matches("mail", {"to": "bob@x.org"})
    assert effect.matches("mail", {"to": ["alice@x.org", "BOB@x.org"]})
    assert not effect.matches("mail", {"to": ["alice@x.org", "eve@x.org"]})
    assert not effect.matches("mail", {"to": "eve@x.org"})
    assert not effect.matches("mail", {"to": 3})
    assert effect.matches("mail", {}) and effect.matches("mail", {"to": []})  # names no one
