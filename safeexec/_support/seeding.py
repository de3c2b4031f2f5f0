"""A seeded session (``Session(seed=...)``): ``random`` and ``numpy.random`` start the same.

The one home of what a seed seeds. Native code: :func:`seed_randomness` runs in the session
process before its first cell. Restricted code (in the worker and in-process) draws from a
generator of its own, never the host's: :func:`restricted_random` makes it, seeded exactly as
``random`` is, so the same seed gives the same draws in every mode (restricted code cannot
import numpy). ``random`` is seeded at once; numpy's global
generator is seeded when ``numpy.random`` is first imported (or now, if the template preloaded
it), by a finder that wraps its loader, so importing numpy costs nothing until a cell does.
``PYTHONHASHSEED`` is fixed by the template for all its sessions and is not per session.
Unseeded, every forked process draws from fresh entropy: ``random`` reseeds itself at a fork, and
:func:`reseed_numpy_at_fork` makes numpy's global generator do the same (a template that preloaded
numpy would otherwise hand every session the same draws).
"""

from __future__ import annotations

import importlib.machinery
import os
import random
import sys
from types import ModuleType

__all__ = ["reseed_numpy_at_fork", "restricted_random", "seed_randomness"]

_NUMPY_RANDOM = "numpy.random"
_seeded = False  # set by seed_randomness


def seed_randomness(seed: int) -> None:
    """Seed ``random`` now and ``numpy.random`` now or when it is first imported."""
    global _seeded
    _seeded = True  # the process's children keep numpy's seeded stream, as before any preload
    random.seed(seed)
    module = sys.modules.get(_NUMPY_RANDOM)
    if module is not None:
        _seed_numpy(module, seed)
    else:
        sys.meta_path.insert(0, _SeedOnImport(seed))


def reseed_numpy_at_fork() -> None:
    """From now on, a child this process forks reseeds ``numpy.random`` (if loaded) from the
    system's entropy, as ``random`` reseeds itself, unless this process was seeded (a seeded
    session seeds it after its own fork)."""
    os.register_at_fork(after_in_child=_reseed_numpy)


def _reseed_numpy() -> None:
    if _seeded:
        return
    module = sys.modules.get(_NUMPY_RANDOM)
    seeder = getattr(module, "seed", None)
    if callable(seeder):
        seeder()


def restricted_random(seed: int | None) -> random.Random:
    """The generator behind restricted code's ``random`` module: seeded like ``random`` by
    :func:`seed_randomness` when ``seed`` is given, else from the system's entropy."""
    # Python 3.13 imports sha512 into the random module's globals on the first string seed: that
    # happens here, not when the code seeds its generator with a string (host module state).
    random.Random("")
    generator = random.Random()
    if seed is not None:
        generator.seed(seed)
    return generator


def _seed_numpy(module: ModuleType, seed: int) -> None:
    seeder = getattr(module, "seed", None)
    if callable(seeder):
        seeder(seed % 2**32)


# Finder and loader by protocol, not by subclassing ``importlib.abc``: on Python 3.11 that
# module pulls in importlib.resources, tempfile and shutil, which every template (and so every
# one-shot run) would import for a hook most sessions never fire.
class _SeedOnImport:
    """Seeds ``numpy.random`` right after it is executed, then steps out of the way."""

    def __init__(self, seed: int) -> None:
        self._seed = seed

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _NUMPY_RANDOM:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)  # type: ignore[arg-type]
        if spec is None or spec.loader is None:
            return spec
        loader, seed = spec.loader, self._seed

        class _Seeding:
            def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
                return loader.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                loader.exec_module(module)
                _seed_numpy(module, seed)

        spec.loader = _Seeding()  # type: ignore[assignment]
        return spec
