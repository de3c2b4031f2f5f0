"""Where a key of a policy file is defined: JSON pointers mapped to TOML lines.

``tomllib`` keeps no positions, so a light scan of the text finds the line of each table and key;
the loader's errors (:class:`~safeexec.errors.PolicyError`) name it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["TomlLocator"]


@dataclass(slots=True)
class TomlLocator:
    """Maps JSON pointers to the line that defines them, by a light scan of the TOML text."""

    lines: dict[str, int] = field(default_factory=dict)

    @classmethod
    def scan(cls, text: str) -> TomlLocator:
        loc = cls()
        table: list[str] = []
        array_counts: dict[str, int] = {}
        in_multiline: str | None = None
        key_re = re.compile(
            r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
        )
        for number, line in enumerate(text.splitlines(), start=1):
            if in_multiline is not None:
                if line.count(in_multiline) % 2 == 1:
                    in_multiline = None
                continue
            stripped = line.strip()
            if stripped.startswith("[["):
                name = _split_key(stripped[2 : stripped.find("]]")])
                joined = "/".join(name)
                index = array_counts.get(joined, 0)
                array_counts[joined] = index + 1
                table = [*name, str(index)]
                loc.lines.setdefault("/" + "/".join(table), number)
                continue
            if stripped.startswith("["):
                table = _split_key(stripped[1 : stripped.find("]")])
                loc.lines.setdefault("/" + "/".join(table), number)
                continue
            match = key_re.match(line)
            if match:
                pointer = "/" + "/".join([*table, *_split_key(match.group(1))])
                loc.lines.setdefault(pointer, number)
                rest = line[match.end() :]
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2 == 1:
                        in_multiline = quote
        return loc

    def line_of(self, pointer: str) -> int | None:
        parts = pointer.split("/")
        while parts:
            candidate = "/".join(parts)
            if candidate in self.lines:
                return self.lines[candidate]
            parts.pop()
        return None


def _split_key(key: str) -> list[str]:
    return [
        part.strip().strip("\"'")
        for part in re.findall(r"""[^."']+|"[^"]*"|'[^']*'""", key)
        if part.strip()
    ]
