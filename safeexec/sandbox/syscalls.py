"""Raw Linux system calls the standard library of Python 3.11 does not wrap, through libc.

Syscall numbers come from libseccomp's tables (via pyseccomp), so no per-architecture table
lives here. Every wrapper raises ``OSError`` with the C errno on failure.
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

import pyseccomp

__all__ = ["check", "libc", "syscall", "syscall_number"]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def check(result: int, what: str) -> int:
    """Turn a C ``-1`` return into ``OSError`` naming the call."""
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


@cache
def syscall_number(name: str) -> int:
    number = pyseccomp.resolve_syscall(pyseccomp.system_arch(), name)
    if number < 0:
        raise OSError(38, f"{name}: no such system call on this architecture")
    return number


def syscall(name: str, *args: int | ctypes.c_void_p | object) -> int:
    """Call the system call ``name`` with integer or pointer arguments."""
    return check(libc.syscall(ctypes.c_long(syscall_number(name)), *args), name)
