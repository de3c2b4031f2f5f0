"""Static cost: upper bounds on tool calls (per tool) and on iterations, composed by the checker."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Cost"]


@dataclass(slots=True)
class Cost:
    """Upper bounds for one piece of a program: calls per tool and loop/op iterations."""

    calls: dict[str, int] = field(default_factory=dict)
    iterations: int = 0

    def add(self, other: Cost) -> Cost:
        """Both pieces run, one after the other."""
        for tool, count in other.calls.items():
            self.calls[tool] = self.calls.get(tool, 0) + count
        self.iterations += other.iterations
        return self

    def times(self, count: int) -> Cost:
        """This piece runs at most ``count`` times."""
        return Cost({t: c * count for t, c in self.calls.items()}, self.iterations * count)

    def either(self, other: Cost) -> Cost:
        """One of the two pieces runs: the per-tool and iteration maxima."""
        tools = set(self.calls) | set(other.calls)
        calls = {t: max(self.calls.get(t, 0), other.calls.get(t, 0)) for t in sorted(tools)}
        return Cost(calls, max(self.iterations, other.iterations))

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())
