"""Landlock: an unprivileged filesystem (and TCP, and scope) allowlist for the calling process.

ABI 1 handles filesystem access, 2 adds REFER, 3 TRUNCATE, 4 TCP bind/connect, 5 device ioctl,
6 scoping of abstract unix sockets and signals. We handle every right the running ABI knows, so
anything not granted below is denied.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import stat
from collections.abc import Iterable

from safeexec.sandbox.record import Record
from safeexec.sandbox.syscalls import syscall

__all__ = ["LandlockResult", "Ruleset", "abi_version", "restrict", "ruleset"]

_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The Landlock ABI the kernel offers, or 0 when Landlock is unavailable."""
    try:
        return syscall("landlock_create_ruleset", None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


class LandlockResult(Record):
    """The Landlock ABI a process was restricted under, and whether network and scope rules
    applied."""

    abi: int
    net: bool
    scoped: bool


class Ruleset:
    """A Landlock ruleset being built: rules are added by :meth:`allow`, and :meth:`enforce`
    confines the calling process with them. Its descriptor is close-on-exec."""

    def __init__(self, fd: int, abi: int) -> None:
        self.fd = fd
        self.abi = abi
        self._handled_fs = _fs_rights(abi)

    def allow(
        self,
        *,
        read_only: Iterable[str] = (),
        read_write: Iterable[str] = (),
        make_symlinks: bool = False,
    ) -> None:
        """Grant ``read_only`` paths read and execute, ``read_write`` ones every right but
        making device nodes and, unless ``make_symlinks``, symbolic links; raises ``OSError``.
        Paths that do not exist are skipped."""
        handled_fs = self._handled_fs
        read_rights = EXECUTE | READ_FILE | READ_DIR
        for path in read_only:
            _add_path(self.fd, path, read_rights & handled_fs)
        withheld = MAKE_CHAR | MAKE_BLOCK | (0 if make_symlinks else MAKE_SYM)
        for path in read_write:
            _add_path(self.fd, path, handled_fs & ~withheld)

    def enforce(self) -> LandlockResult:
        """Confine this process (and its future children) to the rules; closes the ruleset."""
        try:
            syscall("landlock_restrict_self", self.fd, 0)
        finally:
            self.close()
        return LandlockResult(abi=self.abi, net=self.abi >= 4, scoped=self.abi >= 6)

    def close(self) -> None:
        """Drop the ruleset unenforced; idempotent."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def ruleset(*, lowest_fd: int = 0) -> Ruleset:
    """A new, empty ruleset handling every right the running ABI knows (so anything not granted
    is denied), TCP bind/connect and scoping where supported; its descriptor is ``lowest_fd``
    or above. Raises ``OSError``."""
    abi = abi_version()
    if abi < 1:
        raise OSError(38, "landlock is not supported by this kernel")
    attr = _RulesetAttr(handled_access_fs=_fs_rights(abi), handled_access_net=0, scoped=0)
    size = ctypes.sizeof(ctypes.c_uint64)
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 2 * ctypes.sizeof(ctypes.c_uint64)
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = ctypes.sizeof(_RulesetAttr)
    fd = syscall("landlock_create_ruleset", ctypes.byref(attr), size, 0)
    if fd < lowest_fd:
        try:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, lowest_fd)
        finally:
            os.close(fd)
        fd = moved
    return Ruleset(fd, abi)


def restrict(
    *, read_only: Iterable[str], read_write: Iterable[str], make_symlinks: bool = False
) -> LandlockResult:
    """Confine this process (and its future children) to the given paths; raises ``OSError``.

    ``read_only`` paths get read and execute; ``read_write`` ones every right but making device
    nodes and, unless ``make_symlinks``, symbolic links: a link planted in the workdir is the
    first step of every race against a host that opens paths there. Paths that do not exist are
    skipped. TCP bind/connect and out-of-domain signals are denied where supported.
    """
    rules = ruleset()
    try:
        rules.allow(read_only=read_only, read_write=read_write, make_symlinks=make_symlinks)
        return rules.enforce()
    finally:
        rules.close()


def _add_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        syscall("landlock_add_rule", ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)
