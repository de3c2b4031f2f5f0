"""Files beneath the workdir: where ``open`` resolves a path, and the file objects it hands out.

Every path sandboxed code names is resolved like a tool's path argument, by
:class:`~safeexec.tool_targets.BoundPath` (one mechanism for both): relative to the workdir, no
``..`` out of it, no symbolic link on the way or at the end (``openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS)``, or an ``O_NOFOLLOW`` walk), and the file opened through the checked
directory's descriptor, so a link planted or swapped in after the check is never followed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, TypeVar

from safeexec.sandbox.restricted.guards import GuardError
from safeexec.tool_targets import BoundPath, TargetRefused

_T = TypeVar("_T")


class Workdir:
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


class WorkdirFile:
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
