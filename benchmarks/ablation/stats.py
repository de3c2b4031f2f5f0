"""Interval estimates for the ablation's figures: Wilson score intervals for rates, and the median
with its quartiles for ratios (the report's and the charts' one home for them)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["Z95", "spread", "wilson"]

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95 % interval."""


def wilson(successes: int, trials: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``trials`` (``None`` for no trials).

    Unlike the normal approximation it stays inside [0, 1] and is not empty at 0 or ``trials``:
    0 successes out of 10 give (0, 0.278), not (0, 0).
    """
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"successes={successes} must be between 0 and trials={trials}")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def spread(values: Sequence[float]) -> dict[str, float | int] | None:
    """The median of ``values`` with its lower and upper quartiles and ``n`` (``None`` if empty)."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        low = high = ordered[0]
    else:
        low, _, high = statistics.quantiles(ordered, n=4, method="inclusive")
    return {
        "median": round(statistics.median(ordered), 4),
        "p25": round(low, 4),
        "p75": round(high, 4),
        "n": len(ordered),
    }
