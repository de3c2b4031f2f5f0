"""pytest plugin: collect policy packs and run their tests as pytest items.

Use ``pytest -p safeexec.testing.pytest_plugin policies/`` (or any directory holding packs). A
pack is a directory with ``*.toml`` policy files; it becomes one collector with an item per test
file and an item for the pack-level checks (tests present, every rule covered). The pack runs
once; each item reports the failures that belong to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.policy.packs import pack_files, pack_test_files
from safeexec.testing.runner import PackReport, run_pack_tests

__all__ = ["PolicyPack", "PolicyTestItem", "pytest_collect_file"]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect a pack once, through the first of its policy files in merge order."""
    if file_path.suffix != ".toml" or file_path.name.endswith(".test.toml"):
        return None
    files = pack_files(file_path.parent)
    if not files or files[0] != file_path:
        return None
    return PolicyPack.from_parent(parent, path=file_path)


class PolicyPack(pytest.File):
    """A policy pack directory; ``path`` is its first policy file."""

    _report: PackReport | None = None

    def report(self) -> PackReport:
        if self._report is None:
            self._report = run_pack_tests(self.path.parent)
        return self._report

    def collect(self) -> Iterator[pytest.Item]:
        directory = self.path.parent
        for test_file in pack_test_files(directory):
            yield PolicyTestItem.from_parent(self, name=test_file.name, target=str(test_file))
        yield PolicyTestItem.from_parent(self, name="pack", target="")


class PolicyTestItem(pytest.Item):
    """The failures of one test file of a pack (``target``), or the pack-level ones (empty)."""

    def __init__(self, *, target: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.target = target

    def runtest(self) -> None:
        parent = self.parent
        assert isinstance(parent, PolicyPack)
        report = parent.report()
        test_files = set(report.files)
        if self.target:
            mine = [f for f in report.failures if f.file == self.target]
        else:
            mine = [f for f in report.failures if f.file not in test_files]
        if mine:
            raise PolicyTestFailure("\n".join(str(f) for f in mine))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: str | None = None,
    ) -> str:
        if isinstance(excinfo.value, PolicyTestFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"policy tests: {self.name}"


class PolicyTestFailure(AssertionError):
    """A policy-test expectation failed; the message lists file:line: what."""
