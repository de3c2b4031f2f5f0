"""Each registered check maps to the pack rules that use it and to their expect/ok cases.

The checks' behaviour is tested by those cases (``safeexec policy test``, run by
``tests/testing/test_runner.py``); this file pins that no check is left without them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from safeexec.analysis.checks import REGISTERED_CHECKS
from safeexec.policy.loader import load_policy
from safeexec.policy.packs import packs_root, shipped_packs
from safeexec.policy.vocabulary import CHECKS
from safeexec.testing.runner import split_cases


def _annotations(pack_dir: Path) -> Counter[tuple[str, str]]:
    """How many ``(kind, rule id)`` annotations the cases files of a pack directory hold."""
    counts: Counter[tuple[str, str]] = Counter()
    for path in sorted(pack_dir.glob("*.cases.py")):
        for case in split_cases(path.read_text(encoding="utf-8")):
            counts.update((a.kind, a.rule) for a in case.annotations)
    return counts


def test_the_registry_implements_exactly_the_vocabulary() -> None:
    assert sorted(REGISTERED_CHECKS) == sorted(CHECKS)


@pytest.mark.parametrize("check", sorted(REGISTERED_CHECKS))
def test_every_check_is_used_by_a_shipped_rule_with_expect_and_ok_cases(check: str) -> None:
    # A rule's cases live beside the pack file that defines it (packs inherit rules by merging).
    uses = {
        (rule.id, Path(rule.source.rpartition(":")[0]).parent)
        for pack in shipped_packs()
        for rule in load_policy(pack).rules
        if rule.check == check
    }
    assert uses, f"no shipped pack uses check {check!r}"
    for rule_id, pack_dir in sorted(uses):
        assert pack_dir.parent == packs_root(), (rule_id, pack_dir)
        counts = _annotations(pack_dir)
        assert counts["expect", rule_id] >= 1, (pack_dir.name, rule_id, "no expect case")
        assert counts["ok", rule_id] >= 1, (pack_dir.name, rule_id, "no ok case")
