"""``safeexec policy test|lint|docs``."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from safeexec.cli.app import app

runner = CliRunner()


def test_policy_test_runs_every_shipped_pack() -> None:
    result = runner.invoke(app, ["policy", "test"])
    assert result.exit_code == 0, result.output
    for pack in ("default", "strict", "data-analysis"):
        assert f"{pack}: " in result.output and "ok" in result.output


def test_policy_test_fails_a_failing_pack(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text("[limits]\ncpu_seconds = 1\n")
    result = runner.invoke(app, ["policy", "test", str(tmp_path)])
    assert result.exit_code == 1
    assert "no tests" in result.output


def test_policy_lint_is_clean_for_shipped_packs_and_exits_2_on_schema_errors(
    tmp_path: Path,
) -> None:
    assert runner.invoke(app, ["policy", "lint"]).exit_code == 0
    broken = tmp_path / "broken.toml"
    broken.write_text("[imports]\nalow = []\n")
    result = runner.invoke(app, ["policy", "lint", str(broken)])
    assert result.exit_code == 2
    assert "did you mean 'allow'" in result.output


def test_policy_docs_writes_a_page_per_rule(tmp_path: Path) -> None:
    result = runner.invoke(app, ["policy", "docs", "--out", str(tmp_path), "--policy", "strict"])
    assert result.exit_code == 0
    assert (tmp_path / "SX405.md").read_text().startswith("# SX405 forbidden-syntax")
    assert (tmp_path / "README.md").exists()
