"""Where the shipped policy packs live: `policies/` in the repo, `safeexec.policies` installed."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

__all__ = ["pack_files", "pack_test_files", "packs_root", "shipped_packs"]


def packs_root() -> Path:
    """The directory holding the shipped packs (works in the wheel and in an editable install)."""
    with as_file(files("safeexec.policies")) as root:
        return Path(root)


def shipped_packs() -> tuple[str, ...]:
    """Names of the shipped packs, sorted."""
    root = packs_root()
    return tuple(sorted(p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.toml"))))


def pack_files(directory: Path) -> tuple[Path, ...]:
    """A pack's policy files in merge order (name order); test files are not policy files."""
    return tuple(sorted(p for p in directory.glob("*.toml") if not p.name.endswith(".test.toml")))


def pack_test_files(directory: Path) -> tuple[Path, ...]:
    """A pack's tests: ``*.cases.py`` line-annotated cases and ``*.test.toml`` decision cases."""
    return tuple(sorted([*directory.glob("*.cases.py"), *directory.glob("*.test.toml")]))
