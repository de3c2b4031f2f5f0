"""Sizes and durations in human units, both ways: ``"512MiB"`` → bytes and bytes → ``"1 MiB"``.

Binary prefixes (KiB, MiB, GiB, TiB) are what limits mean; the bare ``K``/``M``/``G`` of ``ulimit``
and container tools mean the same binary units, and ``kB``/``MB``/``GB`` are the decimal ones.
"""

from __future__ import annotations

import math
import re

from safeexec.errors import ConfigurationError

__all__ = ["format_bytes", "format_seconds", "parse_bytes"]

_KiB = 1024
_FACTORS = {
    "": 1,
    "b": 1,
    "k": _KiB,
    "kib": _KiB,
    "m": _KiB**2,
    "mib": _KiB**2,
    "g": _KiB**3,
    "gib": _KiB**3,
    "t": _KiB**4,
    "tib": _KiB**4,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def parse_bytes(text: str) -> int:
    """A size such as ``"1048576"``, ``"512MiB"``, ``"1.5G"`` or ``"300 kB"`` in bytes."""
    match = _SIZE.fullmatch(text)
    factor = _FACTORS.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        raise ConfigurationError(
            f"size={text!r} is not a size; write a number of bytes with an optional unit, "
            "e.g. 536870912, 512MiB or 2GiB"
        )
    return int(float(match.group(1)) * factor)


def format_bytes(size: float) -> str:
    """``1048576`` → ``"1 MiB"``, ``1536`` → ``"1.5 KiB"``, ``300`` → ``"300 B"``."""
    value = float(size)
    for unit in _BINARY_UNITS:
        if abs(value) < _KiB or unit == _BINARY_UNITS[-1]:
            if unit == "B":
                return f"{int(value)} B"
            return f"{_trim(value)} {unit}"
        value /= _KiB
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns at its last unit


def format_seconds(seconds: float) -> str:
    """``10.0`` → ``"10 s"``, ``0.25`` → ``"0.25 s"``, ``inf`` → ``"unbounded"``."""
    if math.isinf(seconds):
        return "unbounded"
    return f"{_trim(seconds)} s"


def _trim(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return text or "0"
