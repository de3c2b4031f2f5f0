"""Raw Linux system calls the standard library of Python 3.11 does not wrap, through libc.

Syscall numbers come from libseccomp's tables (via pyseccomp), so no per-architecture table
lives here. The template process never loads pyseccomp (its import runs ``ldconfig`` twice and
sits on every one-shot run's path): the host resolves the numbers of :data:`CALLED` and hands
them over with :func:`resolve`, and the template records them with :func:`install`. Every
wrapper raises ``OSError`` with the C errno on failure.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Mapping

__all__ = ["CALLED", "check", "install", "libc", "resolve", "syscall", "syscall_number"]

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
        # Imported on first need only: see the module docstring.
        import pyseccomp

        number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
        if number < 0:
            raise OSError(38, f"{name}: no such system call on this architecture")
        _numbers[name] = number
    return number


def syscall(name: str, *args: int | ctypes.c_void_p | object) -> int:
    """Call the system call ``name`` with integer or pointer arguments."""
    return check(libc.syscall(ctypes.c_long(syscall_number(name)), *args), name)
