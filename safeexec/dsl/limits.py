"""The caps every DSL plan is made under, and enforced again at run time.

A policy sets them in its ``[dsl]`` table (the loader validates the keys); the session hands them
to the backend in ``SessionSpec.dsl``. Every field has a default, so a policy without ``[dsl]``
gets the values below.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from safeexec.model.fieldwise import Fieldwise

__all__ = ["DslLimits"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class DslLimits(Fieldwise):
    """What one DSL program may do at most.

    * ``max_items`` (1000): items in any list or keys in any record a program makes or a tool
      returns (checked deeply), charged before the value is made; a ``range`` with literal ends
      is charged against its planned size instead (``max_iterations`` bounds it); the static
      length of every list the checker cannot size otherwise.
    * ``max_iterations`` (1,000,000): loop bodies plus per-item op work of the whole program,
      bounded statically (``SX703``) and counted at run time.
    * ``max_text_chars`` (1,000,000): characters of any string a program makes (``+``,
      f-strings and number formats, ``join``, ``replace``, ``str``, ``print``, the value it
      returns, a tool call's arguments as JSON) or a tool returns, charged before it is made.
    * ``max_tool_calls`` (``None``: only the grants and the session budget bound them): tool calls
      the plan may make in total (``SX707``).
    """

    max_items: int = 1000
    max_iterations: int = 1_000_000
    max_text_chars: int = 1_000_000
    max_tool_calls: int | None = None

    def narrowed(self, other: DslLimits) -> DslLimits:
        """The tighter of ``self`` and ``other``, field by field (``None`` is no bound)."""
        values: dict[str, int | None] = {}
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            values[f.name] = (
                theirs if mine is None else mine if theirs is None else min(mine, theirs)
            )
        return DslLimits(**values)  # type: ignore[arg-type]
