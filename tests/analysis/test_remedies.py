"""Refusals that help: every deny finding of a shipped pack says what would make the code run."""

from __future__ import annotations

import pytest

from safeexec.gate import check
from safeexec.model.values import Enforcement
from safeexec.policy.loader import load_policy
from safeexec.policy.packs import shipped_packs


@pytest.mark.parametrize("pack", shipped_packs())
def test_every_deny_finding_of_a_rule_example_names_a_way_forward(pack: str) -> None:
    policy = load_policy(pack)
    checked = 0
    for rule in policy.rules:
        mode = rule.modes[0] if rule.modes else None
        for finding in check(rule.example, policy, backend=mode).findings:
            if finding.enforcement is Enforcement.DENY and not finding.rule.startswith(
                ("SX0", "SX5", "SX9")
            ):
                checked += 1
                assert "; to run it: " in finding.message, (pack, finding.rule, finding.message)
    assert checked >= 5


def test_an_import_refusal_names_the_mode_or_the_pack_extension() -> None:
    policy = load_policy("default")
    (restricted,) = [
        f
        for f in check("import email\n", policy, backend="restricted").findings
        if f.rule == "SX201"
    ]
    assert "run it in native mode (`--mode native`)" in restricted.message
    (native,) = [
        f for f in check("import scipy\n", policy, backend="native").findings if f.rule == "SX201"
    ]
    assert 'extend_allow = ["scipy"]' in native.message
    (no_view, _) = check("import scipy\n", policy, backend="restricted").findings
    assert "restricted mode has no view of `scipy`" in no_view.message


def test_a_rule_remedy_fills_its_placeholders() -> None:
    policy = load_policy("default")
    code = "while True:\n    send_email(to='a')\n"
    (limit,) = [f for f in check(code, policy).findings if f.rule == "SX602"]
    assert "call `send_email` at most 5 times" in limit.message
