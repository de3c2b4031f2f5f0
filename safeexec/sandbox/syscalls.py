"""Raw Linux system calls the standard library of Python 3.11 does not wrap, through libc.

Syscall numbers come from libseccomp's tables (via pyseccomp, loaded by
:func:`load_pyseccomp`), so no per-architecture table lives here. The template process never
loads pyseccomp (libseccomp would sit in every session's memory): the host resolves the numbers
of :data:`CALLED` and hands them over with :func:`resolve`, and the template records them with
:func:`install`. Every wrapper raises ``OSError`` with the C errno on failure.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "CALLED",
    "check",
    "install",
    "libc",
    "load_pyseccomp",
    "resolve",
    "syscall",
    "syscall_number",
]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

CALLED = (
    "capset",
    "fsconfig",
    "fsmount",
    "fsopen",
    "landlock_add_rule",
    "landlock_create_ruleset",
    "landlock_restrict_self",
    "move_mount",
    "open_tree",
)
"""Every syscall the sandbox side calls through :func:`syscall` (a test holds the code to it)."""

# Numbers learnt so far: resolved here through libseccomp, or installed from the host's.
_numbers: dict[str, int] = {}

# The sonames of the libraries pyseccomp looks up (libc's since glibc 2.0, libseccomp's since
# 2.0): what ``ctypes.util.find_library`` reads from ``ldconfig -p`` for them.
_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}
_loading = threading.Lock()


def load_pyseccomp() -> ModuleType:
    """pyseccomp, imported without running ``ldconfig -p``.

    At import pyseccomp finds libc and libseccomp with ``ctypes.util.find_library``, which runs
    ``ldconfig -p`` once per library and scans its output (some 10 ms of CPU, in the thread
    that readies a one-shot run's template). While it imports, a lookup of either library
    first tries its soname, which the dynamic loader resolves from the cache ldconfig prints;
    any other name, or a soname this machine cannot load, gets the real lookup.
    """
    with _loading:
        module = sys.modules.get("pyseccomp")
        if module is not None:
            return module
        import ctypes.util

        real = ctypes.util.find_library
        ctypes.util.find_library = _soname_first(real)
        try:
            import pyseccomp
        finally:
            ctypes.util.find_library = real
        return pyseccomp


def _soname_first(real: Callable[[str], str | None]) -> Callable[..., str | None]:
    def find_library(name: str) -> str | None:
        soname = _SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
            except OSError:
                pass
            else:
                return soname
        return real(name)

    return find_library


def check(result: int, what: str) -> int:
    """Turn a C ``-1`` return into ``OSError`` naming the call."""
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def resolve(names: Iterable[str]) -> dict[str, int]:
    """The numbers of ``names`` on this architecture (those it has), from libseccomp."""
    resolved: dict[str, int] = {}
    for name in names:
        try:
            resolved[name] = syscall_number(name)
        except OSError:
            continue  # not on this architecture: a call to it fails there as before
    return resolved


def install(numbers: Mapping[str, int]) -> None:
    """Record numbers :func:`resolve` gave in another process of this machine (the host)."""
    _numbers.update(numbers)


def syscall_number(name: str) -> int:
    """The number of the system call ``name``; ``OSError`` (ENOSYS) if this arch has none."""
    number = _numbers.get(name)
    if number is None:
        # Loaded on first need only: see the module docstring.
        pyseccomp = load_pyseccomp()
        number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
        if number < 0:
            raise OSError(38, f"{name}: no such system call on this architecture")
        _numbers[name] = number
    return number


def syscall(name: str, *args: int | ctypes.c_void_p | object) -> int:
    """Call the system call ``name`` with integer or pointer arguments."""
    return check(libc.syscall(ctypes.c_long(syscall_number(name)), *args), name)
