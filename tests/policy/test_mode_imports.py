"""One allowlist, two enforcers: for every shipped pack and every module it names, the static gate
in restricted mode and the restricted runtime agree on whether ``import <module>`` works."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from safeexec.gate import check
from safeexec.model.values import Verdict
from safeexec.policy.loader import load_policy
from safeexec.policy.modes import explicitly_allowed, mode_imports
from safeexec.policy.packs import shipped_packs
from safeexec.restricted import MODULE_ALLOWLISTS, RestrictedExecutor
from safeexec.restricted.allowlist import WORKER_ONLY_VIEWS
from safeexec.restricted.views import WorkerViews


def _named_modules(pack: str) -> list[str]:
    imports = load_policy(pack).imports
    names = {entry.removesuffix(".*") for entry in (*imports.allow, *imports.native_allow)}
    return sorted(names | set(MODULE_ALLOWLISTS))


def _statement(module: str) -> str:
    # A module whose name is reserved in restricted code is only ever imported from.
    if module.startswith("_") and module in MODULE_ALLOWLISTS:
        return f"from {module} import {sorted(MODULE_ALLOWLISTS[module])[0]}\n"
    return f"import {module}\n"


def _runtime_imports(allow: tuple[str, ...], module: str, *, in_process: bool = False) -> bool:
    # A session always has a workdir (the file views of ``os``, ``pathlib``… need one). The
    # worker's runtime is confined; the in-process one counts operations and is not.
    with tempfile.TemporaryDirectory() as workdir:
        executor = RestrictedExecutor(
            imports=allow,
            workdir=Path(workdir),
            count_operations=in_process,
            views=None if in_process else WorkerViews,
        )
        try:
            executor.execute(_statement(module), filename="<agree>")
        except (ImportError, SyntaxError):
            return False
    return True


@pytest.mark.parametrize("mode", ["restricted", "restricted-inprocess"])
@pytest.mark.parametrize("pack", shipped_packs())
def test_check_and_restricted_run_agree_for_every_module(pack: str, mode: str) -> None:
    policy = load_policy(pack)
    if "restricted" not in policy.backends.allowed:
        pytest.skip(f"{pack} does not allow the restricted backend")
    if mode not in policy.backends.allowed:
        # A host opts in to the in-process backend by naming it; the imports stay the pack's.
        backends = replace(policy.backends, allowed=(*policy.backends.allowed, mode))
        policy = replace(policy, backends=backends)
    disagreements = []
    for module in _named_modules(pack):
        gate = check(_statement(module), policy, backend=mode).decision
        allowed = gate.verdict is Verdict.ALLOW
        # The session hands the restricted backend exactly `[imports] allow`.
        runs = _runtime_imports(
            policy.imports.allow, module, in_process=mode == "restricted-inprocess"
        )
        if allowed != runs:
            disagreements.append((module, allowed))
    assert disagreements == []


def test_the_check_can_fail_when_the_gate_reads_another_list() -> None:
    # The mechanism under test: were the gate to use the native list in restricted mode, the
    # agreement test above would report the native-only modules (the disagreement issue 11
    # found with numpy and threading).
    policy = load_policy("default")
    native = mode_imports(policy.imports, "native")
    wrong = [m for m in ("getpass", "sched") if explicitly_allowed(m, native)]
    assert wrong == ["getpass", "sched"]
    assert [m for m in wrong if _runtime_imports(policy.imports.allow, m, in_process=True)] == []


def test_restricted_mode_imports_only_modules_with_views() -> None:
    policy = load_policy("data-analysis")
    restricted = mode_imports(policy.imports, "restricted")
    in_process = mode_imports(policy.imports, "restricted-inprocess")
    assert set(restricted) <= set(MODULE_ALLOWLISTS) | WORKER_ONLY_VIEWS
    assert set(in_process) <= set(MODULE_ALLOWLISTS)
    assert "numpy" in restricted and "scipy" not in restricted and "json" in restricted
    assert "numpy" not in in_process and "json" in in_process
    assert "numpy" in mode_imports(policy.imports, "native")


def test_a_wildcard_never_overrides_a_rules_deny_list() -> None:
    assert not explicitly_allowed("ctypes", ("*",))
    assert explicitly_allowed("ctypes.util", ("ctypes.*",))


@pytest.mark.parametrize("module", ["sqlite3", "gzip", "bz2", "lzma", "zipfile", "tarfile"])
def test_the_database_and_archive_views_are_allowed_by_both_enforcers(module: str) -> None:
    # Their restricted views hand the library only files the workdir layer opened, so the
    # default pack allows them in restricted mode; gate and runtime say so together.
    policy = load_policy("default")
    gate = check(f"import {module}\n", policy, backend="restricted").decision
    assert gate.verdict is Verdict.ALLOW, gate.findings
    assert _runtime_imports(policy.imports.allow, module)
    strict = load_policy("strict")
    assert check(f"import {module}\n", strict, backend="restricted").decision.verdict is not (
        Verdict.ALLOW
    )
    assert not _runtime_imports(strict.imports.allow, module)
