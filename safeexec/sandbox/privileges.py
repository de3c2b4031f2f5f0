"""Dropping privileges: unprivileged uid/gid, no capabilities, and ``PR_SET_NO_NEW_PRIVS``."""

from __future__ import annotations

import contextlib
import ctypes
import os

from safeexec.sandbox.syscalls import check, libc, syscall

__all__ = [
    "drop_bounding_set",
    "drop_capabilities",
    "drop_to",
    "has_no_new_privs",
    "set_no_new_privs",
]

_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_GET_NO_NEW_PRIVS = 39
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_LAST_CAP_GUESS = 63
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


# The unused arguments, which the kernel requires to be zero: made once, not per call (each
# session makes some 40 of these calls while it confines itself).
_ZERO = ctypes.c_ulong(0)


def _prctl(option: int, arg: int = 0) -> int:
    result: int = libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), _ZERO, _ZERO, _ZERO)
    if result == -1:
        check(result, f"prctl({option})")
    return result


def drop_to(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` with no supplementary groups (real, effective and saved ids)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError(1, "privilege drop did not take")
    # Changing ids made the process undumpable, so only CAP_SYS_PTRACE could read its /proc;
    # a host without it (a container) reads the session's descriptors as the session's uid.
    _prctl(_PR_SET_DUMPABLE, 1)


def drop_bounding_set() -> None:
    """Empty the capability bounding set: what no ``execve`` of this process or of any child
    forked later can gain back. The effective and permitted sets are left as they are."""
    for cap in range(_CAP_LAST_CAP_GUESS + 1):
        try:
            _prctl(_PR_CAPBSET_DROP, cap)
        except OSError:
            break  # EINVAL past the last capability; EPERM when we hold no CAP_SETPCAP


def drop_capabilities() -> None:
    """Empty the ambient, effective, permitted and inheritable capability sets (the bounding
    set is inherited: see :func:`drop_bounding_set`)."""
    with contextlib.suppress(OSError):  # kernels before 4.3 have no ambient set to clear
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(version=_LINUX_CAPABILITY_VERSION_3, pid=0)
    data = (_CapData * 2)()
    syscall("capset", ctypes.byref(header), ctypes.byref(data))


def set_no_new_privs() -> None:
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def has_no_new_privs() -> bool:
    return _prctl(_PR_GET_NO_NEW_PRIVS) == 1
