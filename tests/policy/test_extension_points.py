"""A pack that extends ``default`` can allow what a shipped rule denies, and lint says so."""

from __future__ import annotations

from pathlib import Path

from safeexec.gate import check
from safeexec.policy.lint import lint_policy
from safeexec.policy.loader import load_policy


def _pack(tmp_path: Path, imports: str) -> Path:
    directory = tmp_path / "team"
    directory.mkdir()
    (directory / "00-policy.toml").write_text(
        f'extends = "default"\n\n[policy]\nid = "team"\n\n[imports]\n{imports}\n'
    )
    return directory


def _rules(code: str, policy_dir: Path | str, backend: str = "native") -> set[str]:
    return {f.rule for f in check(code, load_policy(policy_dir), backend=backend).findings}


def test_extend_allow_overrides_the_base_deny_list(tmp_path: Path) -> None:
    assert _rules("import subprocess\n", "default") == {"SX201", "SX202"}
    team = _pack(tmp_path, 'extend_allow = ["subprocess"]')
    assert _rules("import subprocess\n", team) == set()
    # The call rules still hold: allowing the import does not allow running a shell.
    assert "SX304" in _rules("import subprocess\nsubprocess.run(['id'])\n", team)


def test_extend_allow_scipy_works_and_restricted_still_has_no_view(tmp_path: Path) -> None:
    assert "SX201" in _rules("import scipy\n", "default")
    team = _pack(tmp_path, 'extend_allow = ["scipy"]')
    assert _rules("import scipy\n", team) == set()
    assert _rules("import scipy\n", team, backend="restricted") == {"SX201", "SX205"}


def test_asyncio_runs_natively_and_as_the_built_view_in_restricted_mode() -> None:
    code = "import asyncio\nasyncio.run(asyncio.sleep(0))\n"
    assert _rules(code, "default") == set()
    assert _rules(code, "default", backend="restricted") == set()
    assert "SX201" in _rules(code, "strict", backend="restricted")


def test_os_runs_natively_and_as_the_built_view_in_restricted_mode() -> None:
    assert _rules("import os\nos.listdir('.')\n", "default") == set()
    assert _rules("import os\nos.listdir('.')\n", "default", backend="restricted") == set()


def test_a_wildcard_allowlist_does_not_override_the_deny_list(tmp_path: Path) -> None:
    team = _pack(tmp_path, 'allow = ["*"]')
    assert _rules("import ctypes\n", team) == {"SX202"}
    assert lint_policy(load_policy(team)) == []


def test_lint_warns_when_an_override_widens_a_critical_rule(tmp_path: Path) -> None:
    team = _pack(tmp_path, 'extend_native_allow = ["ctypes.*"]')
    issues = [str(issue) for issue in lint_policy(load_policy(team))]
    assert len(issues) == 1
    assert "'ctypes.*' overrides the deny list of critical rule SX202" in issues[0]
    assert _rules("import ctypes\n", team) == set()
    assert _rules("import ctypes\n", team, backend="restricted") == {"SX201", "SX202"}
