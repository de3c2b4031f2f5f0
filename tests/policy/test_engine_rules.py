"""The catalogue of the engine's own rules: every id the engine can emit is documented there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import safeexec
from safeexec.cli.app import app
from safeexec.model.values import Enforcement, Severity
from safeexec.policy.engine_rules import (
    CHECK_CRASHED,
    ENGINE_RULES,
    ENGINE_RULES_BY_ID,
    engine_finding,
)
from safeexec.policy.schema import Rule
from safeexec.policy.vocabulary import ENGINE_RULE_IDS, reserved_rule_id

PACKAGE = Path(safeexec.__file__).parent
CATALOGUE = PACKAGE / "policy" / "engine_rules.py"
# The DSL's own SX7xx rules and the egress proxy's SX65x are documented catalogues of their own
# (``safeexec explain SX7xx``, ``SX650``).
CATALOGUES = {CATALOGUE, PACKAGE / "dsl" / "rules.py", PACKAGE / "egress" / "catalogue.py"}
# Modules allowed to construct a Finding: the catalogues and the scanner, which builds findings
# of the policy's own (pack-documented) rules.
FINDING_BUILDERS = {*CATALOGUES, PACKAGE / "analysis" / "scanner.py"}
_RULE_ID = re.compile(r"SX\d{3,4}")


def _violations(source: str, path: Path) -> list[str]:
    """Rule-id literals outside the catalogue and Finding constructions outside its builders."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (
            path not in CATALOGUES
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _RULE_ID.fullmatch(node.value)
        ):
            out.append(f"{path}:{node.lineno}: rule id literal {node.value!r}")
        if isinstance(node, ast.Call) and path not in FINDING_BUILDERS:
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "Finding":
                out.append(f"{path}:{node.lineno}: Finding(...) built outside the catalogue")
    return out


def test_every_engine_finding_is_built_from_the_catalogue() -> None:
    violations = [
        v
        for path in sorted(PACKAGE.rglob("*.py"))
        for v in _violations(path.read_text(encoding="utf-8"), path)
    ]
    assert violations == []


def test_the_source_scan_reports_a_hand_built_engine_finding() -> None:
    # Proves the scan above can fail: the pattern every engine finding was once built with.
    sneaky = 'Finding(rule="SX950", name="x", message="m", severity=s, enforcement=e)\n'
    assert len(_violations(sneaky, PACKAGE / "session.py")) == 2
    assert _violations('engine_finding(CHECK_CRASHED, "m")\n', PACKAGE / "session.py") == []


def test_the_catalogue_holds_every_documented_engine_id_once() -> None:
    ids = [rule.id for rule in ENGINE_RULES]
    assert len(ids) == len(set(ids)) == len(ENGINE_RULES_BY_ID)
    expected = {"SX001", "SX002", "SX003", "SX004", "SX005", "SX006", "SX510", "SX520"}
    assert expected | {"SX900", "SX901", "SX902", "SX910", "SX911"} == set(ids)
    assert frozenset(ids) == ENGINE_RULE_IDS
    assert all(reserved_rule_id(rule_id) for rule_id in ids)


@pytest.mark.parametrize("rule", ENGINE_RULES, ids=lambda r: r.id)
def test_every_engine_rule_is_documented(rule: Rule) -> None:
    assert rule.description and rule.rationale and rule.example
    assert rule.source == "engine"
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.name)


def test_engine_finding_refuses_a_rule_outside_the_catalogue() -> None:
    stray = Rule(
        id="SX950",
        name="stray",
        severity=Severity.HIGH,
        enforcement=Enforcement.DENY,
        message="{detail}",
    )
    with pytest.raises(ValueError, match="SX950"):
        engine_finding(stray, "m")
    # Same id, different content: still not the documented rule.
    impostor = Rule(
        id=CHECK_CRASHED.id,
        name="impostor",
        severity=Severity.LOW,
        enforcement=Enforcement.AUDIT,
        message="{detail}",
    )
    with pytest.raises(ValueError, match="SX900"):
        engine_finding(impostor, "m")


def test_an_engine_finding_carries_the_rule_identity() -> None:
    finding = engine_finding(CHECK_CRASHED, "boom " * 100)
    assert (finding.rule, finding.name) == ("SX900", "check-crashed")
    assert finding.severity is Severity.CRITICAL and finding.enforcement is Enforcement.DENY
    assert finding.evidence == finding.message[:200]
    assert engine_finding(CHECK_CRASHED, "m", evidence="").evidence == ""


@pytest.mark.parametrize("rule", ENGINE_RULES, ids=lambda r: r.id)
def test_explain_works_for_every_engine_rule(rule: Rule) -> None:
    result = CliRunner().invoke(app, ["explain", rule.id])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"# {rule.id} {rule.name}")
    assert rule.rationale in result.output
    by_name = CliRunner().invoke(app, ["explain", rule.name])
    assert by_name.exit_code == 0 and by_name.output == result.output


def test_policy_docs_lists_every_engine_rule(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["policy", "docs", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    for rule in ENGINE_RULES:
        assert (tmp_path / f"{rule.id}.md").is_file()
        assert f"[{rule.id}]({rule.id}.md)" in index
