"""The file objects ``open`` hands sandboxed code: reading and writing methods only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from safeexec.sandbox.restricted.guards import GuardError


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
