"""Rule documentation pages and the policy linter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from safeexec.policy.docs import render_rule, write_rule_docs
from safeexec.policy.engine_rules import ENGINE_RULES
from safeexec.policy.lint import lint_policy
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import RuleStatus


def test_rule_page_has_the_four_ruff_style_sections() -> None:
    rule = next(r for r in load_policy("default").rules if r.id == "SX401")
    page = render_rule(rule, policy_id="default")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Known bypasses"):
        assert heading in page
    assert page.startswith("# SX401 escape-dunder-attribute")
    assert "__subclasses__" in page


def test_every_shipped_rule_is_documented() -> None:
    for pack in ("default", "strict", "data-analysis"):
        rules = load_policy(pack).rules
        assert rules, pack
        for rule in rules:
            assert rule.description and rule.rationale and rule.example, rule.id


def test_docs_write_one_page_per_rule_and_an_index(tmp_path: Path) -> None:
    policy = load_policy("default")
    written = write_rule_docs(policy, tmp_path, extra=ENGINE_RULES)
    names = {p.name for p in written}
    assert {f"{r.id}.md" for r in policy.rules} <= names
    assert "SX900.md" in names and "README.md" in names
    index = (tmp_path / "README.md").read_text()
    assert "[SX201](SX201.md)" in index


def test_shipped_packs_lint_clean() -> None:
    for pack in ("default", "strict", "data-analysis"):
        assert lint_policy(load_policy(pack)) == []


def test_lint_flags_missing_docs_and_preview_denies() -> None:
    policy = load_policy("default")
    rule = replace(policy.rules[0], example="", status=RuleStatus.PREVIEW)
    issues = [str(i) for i in lint_policy(replace(policy, rules=(rule,)))]
    assert any("no example" in i for i in issues)
    assert any("preview rule" in i for i in issues)
