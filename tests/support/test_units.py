"""Human units: sizes parse from what people type and print the way limits are meant."""

from __future__ import annotations

import pytest

from safeexec._support.units import format_bytes, format_seconds, parse_bytes
from safeexec.errors import ConfigurationError


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1048576", 1048576),
        ("512MiB", 512 * 1024**2),
        ("512M", 512 * 1024**2),
        ("1.5G", 1536 * 1024**2),
        ("2 GiB", 2 * 1024**3),
        ("300 kB", 300_000),
        ("1MB", 1_000_000),
        ("64b", 64),
    ],
)
def test_sizes_parse_with_binary_and_decimal_units(text: str, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "-1MiB", "12 parsecs", "1e9", "0x10"])
def test_a_bad_size_is_a_configuration_error_naming_it(text: str) -> None:
    with pytest.raises(ConfigurationError, match="size="):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (300, "300 B"),
        (1536, "1.5 KiB"),
        (1024**2, "1 MiB"),
        (1024**3 + 1024**2 * 512, "1.5 GiB"),
        (64 * 1024**2, "64 MiB"),
        (5 * 1024**5, "5120 TiB"),
    ],
)
def test_sizes_print_in_binary_units(size: int, text: str) -> None:
    assert format_bytes(size) == text


def test_seconds_print_without_float_noise() -> None:
    assert [format_seconds(s) for s in (10.0, 0.25, 1 / 3, float("inf"))] == [
        "10 s",
        "0.25 s",
        "0.33 s",
        "unbounded",
    ]
