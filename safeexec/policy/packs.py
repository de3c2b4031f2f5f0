"""Where the shipped policy packs live: `policies/` in the repo, `safeexec.policies` installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["pack_files", "pack_test_files", "packs_root", "shipped_packs"]


def packs_root() -> Path:
    """The directory holding the shipped packs (in the wheel, an editable install, a checkout).

    Where the import system finds the ``safeexec.policies`` package, without importing it or
    :mod:`importlib.resources` (some 4 ms that ``safeexec run`` paid before it could start its
    template); installs are directories, as the packs are read as files. When the package is
    imported from a checkout itself (its root first on ``sys.path``), ``safeexec.policies`` is the
    checkout's top-level ``policies/``, which only an install maps to that name.
    """
    spec = importlib.util.find_spec("safeexec.policies")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    checkout = Path(__file__).resolve().parents[2] / "policies"
    if (checkout / "__init__.py").is_file():
        return checkout
    raise ModuleNotFoundError("No module named 'safeexec.policies'", name="safeexec.policies")


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
