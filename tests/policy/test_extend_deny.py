"""A parent pack minus some modules is one line, lint-clean, and logged under its own id."""

from __future__ import annotations

from pathlib import Path

from safeexec.gate import check
from safeexec.policy import load_policy
from safeexec.policy.lint import lint_policy


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_extend_deny_takes_a_module_out_of_the_parents_allowlist(tmp_path: Path) -> None:
    base = load_policy("default")
    assert "sqlite3" in base.imports.allow
    pack = _write(
        tmp_path / "no-sqlite.toml", 'extends = "default"\n[imports]\nextend_deny = ["sqlite3"]\n'
    )
    policy = load_policy(pack)
    assert "sqlite3" not in policy.imports.allow
    assert "sqlite3" in policy.imports.deny
    assert lint_policy(policy) == []
    (finding,) = [f for f in check("import sqlite3\n", policy).findings if f.rule == "SX201"]
    assert "sqlite3" in finding.message
    assert check("import json\n", policy).decision.verdict == "allow"


def test_extend_allow_takes_a_module_out_of_the_parents_deny_list(tmp_path: Path) -> None:
    parent = _write(tmp_path / "parent" / "p.toml", '[imports]\nallow = ["json"]\ndeny = ["csv"]\n')
    child = _write(
        tmp_path / "child" / "c.toml",
        f'extends = "{parent.parent}"\n[imports]\nextend_allow = ["csv"]\n',
    )
    policy = load_policy(child.parent)
    assert policy.imports.allow == ("json", "csv")
    assert "csv" not in policy.imports.deny


def test_a_packs_own_allow_and_deny_are_not_rewritten(tmp_path: Path) -> None:
    pack = _write(
        tmp_path / "p" / "p.toml",
        'extends = "default"\n[imports]\nallow = ["json"]\ndeny = ["json"]\n'
        'extend_deny = ["csv"]\n',
    )
    policy = load_policy(pack.parent)
    # The layer set both lists itself: its own overlap stays for lint to report.
    assert "json" in policy.imports.allow and "json" in policy.imports.deny
    assert any("allows and denies ['json']" in issue.message for issue in lint_policy(policy))


def test_a_single_file_pack_that_extends_default_has_its_own_id(tmp_path: Path) -> None:
    pack = _write(tmp_path / "team-x.toml", 'extends = "default"\n')
    assert load_policy(pack).info.id == "team-x"
    directory = _write(tmp_path / "team-y" / "a.toml", 'extends = "default"\n')
    assert load_policy(directory.parent).info.id == "team-y"
    named = _write(tmp_path / "z.toml", 'extends = "default"\n[policy]\nid = "named"\n')
    assert load_policy(named).info.id == "named"
