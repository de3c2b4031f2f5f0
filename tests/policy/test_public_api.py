"""The public names of the policy, analysis, estimate, gate and testing modules are pinned."""

from __future__ import annotations

import safeexec.analysis
import safeexec.analysis.estimate
import safeexec.gate
import safeexec.policy
import safeexec.testing


def test_public_names_are_pinned() -> None:
    assert safeexec.policy.__all__ == ["Policy", "load_policy", "shipped_packs"]
    assert safeexec.analysis.__all__ == ["scan"]
    assert safeexec.analysis.estimate.__all__ == ["estimate"]
    assert safeexec.gate.__all__ == [
        "GateResult",
        "PolicySuggestion",
        "check",
        "check_action",
        "check_cache_statistics",
        "clear_check_cache",
        "dsl_tool_signatures",
        "fresh_budget",
        "suggest_policy",
    ]
    assert safeexec.testing.__all__ == ["CaseFailure", "PackReport", "run_pack_tests"]
