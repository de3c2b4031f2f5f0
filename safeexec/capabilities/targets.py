"""What a host tool is handed for a checked ``Path`` or ``Url`` argument: what was checked.

A path is resolved beneath the tool's root from a directory descriptor, with
``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` where the kernel has it and a walk of single
components opened ``O_NOFOLLOW`` relative to their parent's descriptor where it does not. The tool
gets a :class:`BoundPath` holding the descriptor of the checked directory and the final name: it
opens only through that descriptor (``O_NOFOLLOW``, regular files only), so no pathname the sandbox
can change is ever resolved again. A URL's host is resolved once and every address checked; the
tool gets a :class:`CheckedURL` pinned to the first address, and connects only to it.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import ipaddress
import os
import platform
import socket
import stat
import struct
import typing
import urllib.parse
from dataclasses import dataclass
from typing import NoReturn

from safeexec.model.fieldwise import Fieldwise

__all__ = ["BoundPath", "CheckedURL", "TargetRefused", "is_forbidden_address"]

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}.get(platform.machine())
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_COMPONENTS = 256


class TargetRefused(Exception):
    """A path or URL argument that cannot be handed to the tool (message goes back to the code).

    ``missing`` is True when a directory on the way does not exist (not a link, not outside).
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


# -- paths -------------------------------------------------------------------------------------


# struct open_how {u64 flags; u64 mode; u64 resolve}, compiled once: ``struct.pack`` looks its
# format up in a process-wide cache that an in-process sandbox's str subclass could poison.
_OPEN_HOW = struct.Struct("QQQ")


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2) through ctypes; ``OSError(ENOSYS)`` where the kernel or machine lacks it."""
    if _SYS_OPENAT2 is None:
        raise OSError(errno.ENOSYS, "openat2 is not known on this machine")
    libc = _libc()
    how = _OPEN_HOW.pack(flags, 0, resolve)
    buffer = ctypes.create_string_buffer(how, len(how))
    fd = int(
        libc.syscall(
            ctypes.c_long(_SYS_OPENAT2),
            ctypes.c_int(dir_fd),
            ctypes.c_char_p(os.fsencode(path)),
            buffer,
            ctypes.c_size_t(len(how)),
        )
    )
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return fd


def _walk(dir_fd: int, parts: tuple[str, ...]) -> int:
    """Open ``parts`` beneath ``dir_fd`` one component at a time, never following a link."""
    current = os.dup(dir_fd)
    try:
        for part in parts:
            following = os.open(part, _DIR_FLAGS, dir_fd=current)
            os.close(current)
            current = following
            if not stat.S_ISDIR(os.fstat(current).st_mode):  # O_PATH|O_NOFOLLOW opens a link
                raise OSError(errno.ELOOP, "a component is a symbolic link", part)
        return current
    except BaseException:
        os.close(current)
        raise


# Tests switch resolvers to exercise both; production takes openat2 and falls back on ENOSYS.
_use_openat2 = True


def _open_directory(root_fd: int, parts: tuple[str, ...]) -> int:
    global _use_openat2
    if not parts:
        return os.dup(root_fd)
    if _use_openat2:
        resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
        try:
            return _openat2(root_fd, "/".join(parts), _DIR_FLAGS, resolve)
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EPERM):  # EPERM: a seccomp filter said no
                raise
            _use_openat2 = False
    return _walk(root_fd, parts)


def _components(value: str) -> tuple[str, ...]:
    if "\x00" in value:
        raise TargetRefused("NUL byte in path")
    if value.startswith("/"):
        raise TargetRefused(f"{value[:200]!r} must be relative to the tool's root")
    # Lexically first, so no '..' is left for the kernel to walk while the sandbox renames
    # directories (the walk forbids links, so the lexical and the real meaning agree).
    normal = os.path.normpath(value)
    parts = tuple(p for p in normal.split("/") if p not in ("", "."))
    if parts[:1] == ("..",):
        raise TargetRefused(f"{value[:200]!r} leads outside the tool's root")
    if len(parts) > _MAX_COMPONENTS:
        raise TargetRefused(f"path has more than {_MAX_COMPONENTS} components")
    return parts


class _GatewayMade(type):
    """Metaclass: ``BoundPath(...)`` raises; only the gateway's check makes one."""

    def __call__(cls, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(f"{cls.__qualname__} has no public constructor; the gateway makes them")


class BoundPath(metaclass=_GatewayMade):
    """A path the gateway checked beneath a tool's root, bound to the descriptor of its directory.

    Everything opens through that descriptor with ``O_NOFOLLOW``: a symbolic link, FIFO, device
    or multiply-linked file put there later is refused, never followed. It offers the
    ``pathlib.Path`` calls a tool needs (``read_text``, ``read_bytes``, ``write_text``,
    ``write_bytes``, ``open``, ``exists``, ``is_file``, ``is_dir``, ``iterdir_names``, ``stat``,
    ``mkdir``, ``rmdir``, ``unlink``, ``rename_to``) and on
    purpose no ``__fspath__``: there is no pathname to hand to anything else. Valid only during
    the tool call (the gateway closes it afterwards).
    """

    __slots__ = ("_closed", "_dir_fd", "_name", "relative")

    relative: str
    _dir_fd: int
    _name: str
    _closed: bool

    @classmethod
    def _resolve(cls, root: str, value: str) -> BoundPath:
        """Resolve ``value`` beneath ``root`` (``TargetRefused`` if it leaves it or has a link)."""
        parts = _components(value)
        try:
            root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise TargetRefused(f"the tool's root cannot be opened ({exc.strerror})") from None
        try:
            dir_fd = _open_directory(root_fd, parts[:-1])
        except OSError as exc:
            raise TargetRefused(
                f"{value[:200]!r} does not resolve beneath the tool's root without links "
                f"({exc.strerror})",
                missing=exc.errno in (errno.ENOENT, errno.ENOTDIR),
            ) from None
        finally:
            os.close(root_fd)
        self = object.__new__(cls)
        setter = object.__setattr__
        setter(self, "relative", "/".join(parts) or ".")
        setter(self, "_dir_fd", dir_fd)
        setter(self, "_name", parts[-1] if parts else ".")
        setter(self, "_closed", False)
        try:
            info = self._lstat()
        except OSError as exc:
            self._close()
            raise TargetRefused(f"{value[:200]!r} cannot be examined ({exc.strerror})") from None
        except BaseException:
            self._close()
            raise
        if info is not None and stat.S_ISLNK(info.st_mode):
            self._close()
            raise TargetRefused(f"{value[:200]!r} is a symbolic link")
        return self

    @property
    def name(self) -> str:
        return self._name

    def _fd(self) -> int:
        if self._closed:
            raise ValueError(f"{self.relative!r}: the tool call this path belonged to is over")
        return self._dir_fd

    def _lstat(self) -> os.stat_result | None:
        try:
            return os.stat(self._name, dir_fd=self._fd(), follow_symlinks=False)
        except FileNotFoundError:
            return None

    def exists(self) -> bool:
        return self._lstat() is not None

    def is_file(self) -> bool:
        info = self._lstat()
        return info is not None and stat.S_ISREG(info.st_mode)

    def is_dir(self) -> bool:
        info = self._lstat()
        return info is not None and stat.S_ISDIR(info.st_mode)

    def stat(self) -> os.stat_result:
        """``lstat`` of the checked name (a link is reported as a link, never followed)."""
        info = self._lstat()
        if info is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.relative)
        return info

    def mkdir(self, mode: int = 0o777) -> None:
        os.mkdir(self._name, mode, dir_fd=self._fd())

    def rmdir(self) -> None:
        os.rmdir(self._name, dir_fd=self._fd())

    def unlink(self) -> None:
        os.unlink(self._name, dir_fd=self._fd())

    def rename_to(self, target: BoundPath) -> None:
        """Rename the checked name to ``target``'s, both through their directories' descriptors
        (a link is moved as a link, never followed)."""
        os.rename(self._name, target._name, src_dir_fd=self._fd(), dst_dir_fd=target._fd())

    def iterdir_names(self) -> list[str]:
        """The names in this directory (not followed if it has become a link)."""
        fd = os.open(self._name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._fd())
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def open(
        self,
        mode: str = "r",
        *,
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> typing.IO[typing.Any]:
        """Open the checked file like ``Path.open``; a regular file with one link only."""
        flags = _mode_flags(mode)
        fd = os.open(self._name, flags, 0o644, dir_fd=self._fd())
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", self.relative)
            if info.st_nlink != 1:  # a hard link may be a file from elsewhere
                raise OSError(errno.EMLINK, "a file with several hard links", self.relative)
            os.set_blocking(fd, True)
            if "t" in mode or "b" not in mode:
                return open(fd, mode, buffering, encoding or "utf-8", errors, newline)
            return open(fd, mode, buffering)
        except BaseException:
            os.close(fd)
            raise

    def read_bytes(self) -> bytes:
        with self.open("rb") as handle:
            return typing.cast(bytes, handle.read())

    def read_text(self, encoding: str = "utf-8", errors: str | None = None) -> str:
        with self.open("r", encoding=encoding, errors=errors) as handle:
            return typing.cast(str, handle.read())

    def write_bytes(self, data: bytes) -> int:
        with self.open("wb") as handle:
            return int(handle.write(data))

    def write_text(self, data: str, encoding: str = "utf-8") -> int:
        with self.open("w", encoding=encoding) as handle:
            return int(handle.write(data))

    def _close(self) -> None:
        if not self._closed:
            object.__setattr__(self, "_closed", True)
            os.close(self._dir_fd)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("a BoundPath is immutable")

    def __reduce_ex__(self, protocol: typing.SupportsIndex) -> NoReturn:
        raise TypeError("a BoundPath cannot be pickled or copied")

    def __str__(self) -> str:
        return self.relative

    def __repr__(self) -> str:
        return f"<BoundPath {self.relative!r}{' closed' if self._closed else ''}>"


def _mode_flags(mode: str) -> int:
    if not set(mode) <= set("rwaxbt+") or sum(mode.count(c) for c in "rwax") != 1:
        raise ValueError(f"mode={mode!r} is not a file mode")
    flags = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK  # a FIFO must not block
    plus = "+" in mode
    if "r" in mode:
        return flags | (os.O_RDWR if plus else os.O_RDONLY)
    flags |= (os.O_RDWR if plus else os.O_WRONLY) | os.O_CREAT
    if "w" in mode:
        return flags | os.O_TRUNC
    if "a" in mode:
        return flags | os.O_APPEND
    return flags | os.O_EXCL


# -- URLs --------------------------------------------------------------------------------------


def is_forbidden_address(address: str) -> bool:
    """True for addresses a network tool must never reach: loopback, private, link-local,
    multicast, reserved, unspecified (and anything that does not parse as an IP address)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global or ip.is_multicast or ip.is_reserved or ip.is_unspecified


# Tests swap the resolver for one that answers from a table (they never contact a real name
# server); production resolves with getaddrinfo.
Resolver = typing.Callable[[str, int], list[str]]


def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CheckedURL(Fieldwise):
    """A URL whose host was resolved once and every address checked, pinned to ``address``.

    Tools connect with :meth:`connect` (to the pinned address, never re-resolving ``host``) and
    send ``host`` in the ``Host`` header or TLS server name themselves.
    """

    url: str
    scheme: str
    host: str
    port: int
    address: str
    path: str

    @classmethod
    def _check(cls, value: str, *, resolve: Resolver = _getaddrinfo) -> CheckedURL:
        parsed = urllib.parse.urlsplit(value)
        try:
            port = parsed.port
        except ValueError:
            raise TargetRefused(f"{value[:200]!r} has an invalid port") from None
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise TargetRefused(f"{value[:200]!r} is not an http(s) URL with a host")
        host = parsed.hostname
        port = port or (443 if parsed.scheme == "https" else 80)
        try:
            addresses = list(dict.fromkeys(resolve(host, port)))
        except (OSError, UnicodeError) as exc:
            raise TargetRefused(f"cannot resolve host {host[:200]!r} ({exc})") from None
        if not addresses or any(is_forbidden_address(a) for a in addresses):
            raise TargetRefused(
                f"host {host[:200]!r} resolves to a private, loopback or link-local address"
            )
        target = parsed.path or "/"
        if parsed.query:
            target += "?" + parsed.query
        return cls(
            url=value, scheme=parsed.scheme, host=host, port=port, address=addresses[0], path=target
        )

    def connect(self, *, timeout: float = 10.0) -> socket.socket:
        """A TCP connection to the pinned address and port (the host is not resolved again)."""
        if is_forbidden_address(self.address):  # a hand-made CheckedURL is checked here too
            raise OSError(errno.EACCES, f"address {self.address!r} is forbidden")
        return socket.create_connection((self.address, self.port), timeout=timeout)

    def __str__(self) -> str:
        return self.url
