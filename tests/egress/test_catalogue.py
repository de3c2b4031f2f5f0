"""The SX65x catalogue: every rule names a real [network] key and has an explain page."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.egress import NetworkPolicy
from safeexec.egress.catalogue import NETWORK_RULES, NetworkRule
from safeexec.policy.vocabulary import reserved_rule_id

FIELDS = {f.name for f in dataclasses.fields(NetworkPolicy)}


@pytest.mark.parametrize("rule", NETWORK_RULES, ids=lambda r: r.id)
def test_each_rule_names_a_network_key(rule: NetworkRule) -> None:
    table, _, key = rule.key.partition(".")
    assert table == "network" and (key == "" or key in FIELDS)
    assert reserved_rule_id(rule.id)


@pytest.mark.parametrize("rule", NETWORK_RULES, ids=lambda r: r.id)
def test_explain_documents_each_rule(rule: NetworkRule) -> None:
    result = CliRunner().invoke(app, ["explain", rule.id])
    assert result.exit_code == 0, result.output
    assert rule.name in result.output
    assert rule.key.partition(".")[2] in result.output
