"""``suggest_policy``: the smallest import extension that lets a file past the gate."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.gate import check, suggest_policy
from safeexec.model.values import Verdict
from safeexec.policy.loader import load_policy

CODE = "import scipy.stats\nimport yaml\nprint(scipy.stats.norm.cdf(0))\n"


def test_the_suggested_pack_allows_the_code(tmp_path: Path) -> None:
    default = load_policy("default")
    assert check(CODE, default).decision.verdict is Verdict.DENY
    suggestion = suggest_policy(CODE, default)
    assert suggestion.modules == ("scipy.stats", "yaml")
    assert suggestion.remaining == ()
    pack = tmp_path / "team"
    pack.mkdir()
    (pack / "00-policy.toml").write_text(suggestion.toml)
    assert check(CODE, load_policy(pack)).decision.verdict is Verdict.ALLOW


def test_a_critical_refusal_is_never_suggested_away() -> None:
    suggestion = suggest_policy("import ctypes\neval('1')\n", load_policy("default"))
    assert suggestion.modules == () and suggestion.toml == ""
    assert {f.rule for f in suggestion.remaining} == {"SX201", "SX202", "SX301"}


def test_restricted_suggests_only_modules_with_a_view() -> None:
    suggestion = suggest_policy("import array, scipy\n", load_policy("strict"))
    assert suggestion.modules == ("array",)
    assert 'extend_allow = ["array"]' in suggestion.toml
    assert {f.rule for f in suggestion.remaining} == {"SX201", "SX205"}


def test_the_cli_prints_the_extension(tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    path.write_text(CODE)
    result = CliRunner().invoke(app, ["check", "--suggest-policy", str(path)])
    assert result.exit_code == 0, result.output
    assert 'extends = "default"' in result.output
    assert 'extend_native_allow = ["scipy.stats", "yaml"]' in result.output
