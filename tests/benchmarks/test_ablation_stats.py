"""The ablation's interval estimates and provenance."""

from __future__ import annotations

import pytest

from benchmarks.ablation.provenance import provenance
from benchmarks.ablation.stats import spread, wilson


@pytest.mark.parametrize(
    ("k", "n", "expected"),
    [
        (0, 10, (0.0, 0.2775)),  # not (0, 0): a zero rate still has an upper bound
        (5, 10, (0.2366, 0.7634)),
        (10, 10, (0.7225, 1.0)),
        (1, 1, (0.2065, 1.0)),
        (81, 263, (0.2553, 0.3662)),
    ],
)
def test_the_wilson_interval_matches_its_published_values(
    k: int, n: int, expected: tuple[float, float]
) -> None:
    assert wilson(k, n) == pytest.approx(expected, abs=1e-4)


def test_no_trials_have_no_interval_and_impossible_counts_are_refused() -> None:
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="between 0 and trials"):
        wilson(3, 2)


def test_the_spread_is_the_median_and_its_quartiles() -> None:
    assert spread([]) is None
    assert spread([4.0]) == {"median": 4.0, "p25": 4.0, "p75": 4.0, "n": 1}
    assert spread([1.0, 2.0, 3.0, 4.0, 100.0]) == {"median": 3.0, "p25": 2.0, "p75": 4.0, "n": 5}


def test_provenance_names_the_commit_packages_environment_seeds_budgets_and_model() -> None:
    budgets = {"max_tokens": 64, "token_budget": 1000, "cpu_seconds": 5.0}
    found = provenance(model="openai:m", seeds=[3], budgets=budgets, argv=["x"])  # type: ignore[arg-type]
    commit = found["commit"]
    assert commit is None or (isinstance(commit, str) and len(commit) == 40)
    packages = found["packages"]
    assert isinstance(packages, dict) and "safeexec" in packages and "pytest" in packages
    environment = found["environment"]
    assert isinstance(environment, dict) and len(str(environment["fingerprint_sha256"])) == 64
    assert found["seeds"] == [3] and found["budgets"] == budgets and found["model"] == "openai:m"
