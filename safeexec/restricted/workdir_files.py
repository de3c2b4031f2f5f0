"""Files beneath the workdir: where ``open`` resolves a path, and the file objects it hands out.

Every path sandboxed code names is resolved like a tool's path argument, by
:class:`~safeexec.capabilities.targets.BoundPath` (one mechanism for both): relative to the workdir,
no ``..`` out of it, no symbolic link on the way or at the end (``openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS)``, or an ``O_NOFOLLOW`` walk), and the file opened through the checked
directory's descriptor, so a link planted or swapped in after the check is never followed.
"""

from __future__ import annotations

import fnmatch
import glob as glob_module
import os
import posixpath
import secrets
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from safeexec.capabilities.targets import BoundPath, TargetRefused
from safeexec.restricted.guards import GuardError, RuntimeClass

_T = TypeVar("_T")


class Workdir(metaclass=RuntimeClass):
    """The workdir as sandboxed code sees it: every path resolved beneath it by ``BoundPath``."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def relative(self, file: str, caller: str) -> str:
        """``file`` relative to the workdir (an absolute path must lie beneath it)."""
        if type(file) is not str:
            raise TypeError(f"{caller}(): the path must be a string")
        if not file.startswith("/"):
            return file
        if file != self.root and not file.startswith(self.root + "/"):
            raise PermissionError(f"{caller}(): {file!r} is outside the working directory")
        return file[len(self.root) :].lstrip("/") or "."

    def resolve(self, file: str, caller: str) -> BoundPath:
        """``file`` bound beneath the workdir (the caller closes it), or the error to raise."""
        try:
            return BoundPath._resolve(self.root, self.relative(file, caller))
        except TargetRefused as exc:
            if exc.missing:
                raise FileNotFoundError(2, "No such file or directory", file) from None
            raise PermissionError(
                f"{caller}(): {file!r} is outside the working directory or reached through a "
                "symbolic link"
            ) from None

    def apply(self, file: str, caller: str, operation: Callable[[BoundPath], _T]) -> _T:
        """Run ``operation`` on ``file`` bound beneath the workdir; OS errors name ``file``."""
        path = self.resolve(file, caller)
        try:
            return operation(path)
        except OSError as exc:
            if exc.errno is None:
                raise
            raise type(exc)(exc.errno, exc.strerror, file) from None
        finally:
            path._close()

    def open(
        self,
        file: str,
        mode: str = "r",
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> WorkdirFile:
        """``open`` for sandboxed code: a regular file beneath the workdir, never a link."""
        if type(file) is not str or type(mode) is not str:
            raise TypeError("open(): file and mode must be strings")
        handle = self.apply(
            file,
            "open",
            lambda path: path.open(
                mode, buffering=buffering, encoding=encoding, errors=errors, newline=newline
            ),
        )
        return WorkdirFile._wrap(handle, name=file)


class WorkdirFile(metaclass=RuntimeClass):
    """What ``open`` returns to sandboxed code: the file's reading and writing methods only.

    Never the real file object: from that, ``type(f.buffer.raw)`` is ``io.FileIO``, which opens
    any path or file descriptor of the process. The class has no public constructor.
    """

    __slots__ = ("_file", "name")
    _file: IO[Any]
    name: str

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise GuardError("files come from open() only")

    @classmethod
    def _wrap(cls, file: IO[Any], *, name: str) -> WorkdirFile:
        view = object.__new__(cls)
        object.__setattr__(view, "_file", file)
        object.__setattr__(view, "name", name)
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise GuardError("file objects are read-only in restricted mode")

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("file objects cannot be pickled or copied in restricted mode")

    @property
    def mode(self) -> str:
        return str(self._file.mode)

    @property
    def closed(self) -> bool:
        return bool(self._file.closed)

    def read(self, size: int = -1) -> str | bytes:
        return self._file.read(size)

    def readline(self, size: int = -1) -> str | bytes:
        return self._file.readline(size)

    def readlines(self, hint: int = -1) -> list[str | bytes]:
        return self._file.readlines(hint)

    def write(self, data: str | bytes) -> int:
        return self._file.write(data)

    def writelines(self, lines: Iterable[str | bytes]) -> None:
        self._file.writelines(lines)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def truncate(self, size: int | None = None) -> int:
        return self._file.truncate(size)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def readable(self) -> bool:
        return bool(self._file.readable())

    def writable(self) -> bool:
        return bool(self._file.writable())

    def seekable(self) -> bool:
        return bool(self._file.seekable())

    def __iter__(self) -> WorkdirFile:
        return self

    def __next__(self) -> str | bytes:
        return next(self._file)

    def __enter__(self) -> WorkdirFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def __repr__(self) -> str:
        return f"<restricted file {self.name!r} mode={self.mode!r}>"


def _missing_ok(operation: Callable[[], bool]) -> bool:
    try:
        return operation()
    except (FileNotFoundError, PermissionError, NotADirectoryError):
        return False


class WorkdirOps(metaclass=RuntimeClass):
    """The file-system calls the ``os``, ``os.path``, ``shutil``, ``glob`` and ``pathlib``
    views make, each resolved beneath the workdir by :class:`Workdir` (links are never
    followed: a link is listed, but it is neither a file nor a directory here)."""

    def __init__(self, files: Workdir) -> None:
        self.files = files
        # The ``pathlib`` view's path classes, whose instances ``open`` takes as their text.
        self._path_types: tuple[type, ...] = ()

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    # -- the workdir layer ---------------------------------------------------------------------
    @property
    def root(self) -> str:
        """The workdir's absolute path (what ``os.getcwd()`` answers)."""
        return self.files.root

    def relative(self, file: str, caller: str) -> str:
        """``file`` relative to the workdir (see :meth:`Workdir.relative`)."""
        return self.files.relative(file, caller)

    def apply(self, file: str, caller: str, operation: Callable[[BoundPath], _T]) -> _T:
        """Run ``operation`` on ``file`` bound beneath the workdir (see :meth:`Workdir.apply`)."""
        return self.files.apply(file, caller, operation)

    def admit_path_type(self, path_type: type) -> None:
        """Let :meth:`open` take instances of ``path_type`` (exactly) as their text."""
        self._path_types = (*self._path_types, path_type)

    def open(
        self,
        file: object,
        mode: str = "r",
        buffering: int = -1,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> WorkdirFile:
        """``open`` for sandboxed code (see :meth:`Workdir.open`); a ``pathlib`` view path
        opens its text."""
        if type(file) in self._path_types:
            file = str(file)
        return self.files.open(file, mode, buffering, encoding, errors, newline)  # type: ignore[arg-type]

    def disk_usage(self) -> Any:
        """``shutil.disk_usage`` of the workdir's file system."""
        return shutil.disk_usage(self.files.root)

    # -- looking -------------------------------------------------------------------------------
    def stat(self, path: str) -> os.stat_result:
        return self.files.apply(path, "stat", lambda p: p.stat())

    def exists(self, path: str) -> bool:
        return _missing_ok(lambda: self.files.apply(path, "exists", lambda p: p.exists()))

    def isfile(self, path: str) -> bool:
        return _missing_ok(lambda: self.files.apply(path, "isfile", lambda p: p.is_file()))

    def isdir(self, path: str) -> bool:
        return _missing_ok(lambda: self.files.apply(path, "isdir", lambda p: p.is_dir()))

    def getsize(self, path: str) -> int:
        return self.stat(path).st_size

    def getmtime(self, path: str) -> float:
        return self.stat(path).st_mtime

    def listdir(self, path: str = ".") -> list[str]:
        return self.files.apply(path, "listdir", lambda p: p.iterdir_names())

    def walk(self, top: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """``os.walk`` top-down; links are listed with the files and never entered."""
        pending = [top]
        while pending:
            root = pending.pop(0)
            try:
                names = self.listdir(root)
            except OSError:
                continue
            dirs = [n for n in names if self.isdir(posixpath.join(root, n))]
            files = [n for n in names if n not in dirs]
            yield root, dirs, files
            pending[:0] = [posixpath.join(root, d) for d in dirs]

    def glob(self, pattern: str, *, recursive: bool = False) -> list[str]:
        """``glob.glob`` beneath the workdir (hidden names only when the pattern asks)."""
        if type(pattern) is not str:
            raise TypeError("glob(): the pattern must be a string")
        head = "/" if pattern.startswith("/") else ""
        parts = [p for p in pattern.split("/") if p]
        found = [head]
        for part in parts:
            following: list[str] = []
            for base in found:
                following.extend(self._expand(base, part, recursive=recursive))
            found = following
        return [f for f in found if f and f != head]

    def _expand(self, base: str, part: str, *, recursive: bool) -> list[str]:
        directory = base or "."
        if recursive and part == "**":
            below = [base] if base else [""]
            for root, dirs, _ in self.walk(directory):
                prefix = "" if root == "." and not base else root
                below.extend(posixpath.join(prefix, d) for d in dirs if not d.startswith("."))
            return below
        if not glob_module.has_magic(part):
            candidate = posixpath.join(base, part)
            return [candidate] if self.exists(candidate) else []
        try:
            names = self.listdir(directory)
        except OSError:
            return []
        if not part.startswith("."):
            names = [n for n in names if not n.startswith(".")]
        return [posixpath.join(base, n) for n in fnmatch.filter(names, part)]

    # -- changing ------------------------------------------------------------------------------
    def mkdir(self, path: str, mode: int = 0o777) -> None:
        self.files.apply(path, "mkdir", lambda p: p.mkdir(mode))

    def makedirs(self, path: str, mode: int = 0o777, exist_ok: bool = False) -> None:
        parts = [p for p in self.files.relative(path, "makedirs").split("/") if p]
        for index in range(len(parts)):
            prefix = "/".join(parts[: index + 1])
            if self.isdir(prefix):
                if index == len(parts) - 1 and not exist_ok:
                    raise FileExistsError(17, "File exists", path)
                continue
            self.mkdir(prefix, mode)

    def remove(self, path: str) -> None:
        self.files.apply(path, "remove", lambda p: p.unlink())

    def rmdir(self, path: str) -> None:
        self.files.apply(path, "rmdir", lambda p: p.rmdir())

    def rename(self, source: str, target: str) -> None:
        destination = self.files.resolve(target, "rename")
        try:
            self.files.apply(source, "rename", lambda p: p.rename_to(destination))
        finally:
            destination._close()

    def copyfile(self, source: str, target: str) -> str:
        data = self.files.apply(source, "copy", lambda p: p.read_bytes())
        self.files.apply(target, "copy", lambda p: p.write_bytes(data))
        return target

    def copy(self, source: str, target: str) -> str:
        if self.isdir(target):
            target = posixpath.join(target, posixpath.basename(source))
        return self.copyfile(source, target)

    def move(self, source: str, target: str) -> str:
        if self.isdir(target):
            target = posixpath.join(target, posixpath.basename(source))
        self.rename(source, target)
        return target

    def rmtree(self, path: str, ignore_errors: bool = False) -> None:
        try:
            for root, dirs, files in reversed(list(self.walk(path))):
                for name in files:
                    self.remove(posixpath.join(root, name))
                for name in dirs:
                    self.rmdir(posixpath.join(root, name))
            self.rmdir(path)
        except OSError:
            if not ignore_errors:
                raise

    def mkdtemp(self, suffix: str = "", prefix: str = "tmp", dir: str | None = None) -> str:
        for _ in range(100):
            name = posixpath.join(dir or ".", f"{prefix}{secrets.token_hex(4)}{suffix}")
            try:
                self.mkdir(name, 0o700)
            except FileExistsError:
                continue
            return name
        raise FileExistsError(17, "No usable temporary directory name found", dir)
