"""Views of ``gzip``, ``bz2`` and ``lzma``, and the workdir file helper the archive views share.

A name the code passes (a string or a ``Path``) is opened by the workdir layer (``BoundPath``:
beneath the workdir, no link) and the library is handed that file object; a file object the code
already holds passes through. What comes back is a :class:`WorkdirFile` view, never the
library's file object, whose class opens any path by name (``type(gzip.open(...))("/etc/x")``).
"""

from __future__ import annotations

import bz2
import errno
import functools
import gzip
import io
import lzma
import os
import pathlib
import posixpath
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from safeexec.restricted.guards import GuardError, RuntimeClass
from safeexec.restricted.workdir_files import WorkdirFile, WorkdirOps

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell

# The most one extracted member may write (the default pack's ``file_size_bytes``).
MAX_MEMBER_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20


def path_name(value: object) -> str | None:
    """The file name ``value`` stands for, or ``None`` when it is not a name."""
    from safeexec.restricted.views.workdir_views import WorkdirPath

    if type(value) is str:
        return value
    if isinstance(value, WorkdirPath | pathlib.PurePath):
        return str(value)
    return None


def _binary(mode: str) -> str:
    return mode.replace("t", "").replace("b", "") + "b"


class Files(metaclass=RuntimeClass):
    """Opening names through the workdir layer and copying within it, for one cell."""

    def __init__(self, cell: Cell, ops: WorkdirOps) -> None:
        self.cell = cell
        self.ops = ops

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def stream(self, value: object, mode: str, caller: str) -> tuple[Any, bool]:
        """A binary file for ``value`` and whether the view opened it (and must close it)."""
        name = path_name(value)
        if name is not None:
            return self.ops.open(name, mode), True
        if isinstance(value, os.PathLike) or not (
            hasattr(value, "read") or hasattr(value, "write")
        ):
            raise TypeError(f"{caller}: expected a file name, a Path or a file object")
        return value, False

    def check_budget(self) -> None:
        budget = self.cell.budget
        if budget.exhausted:
            next(budget.counter)  # raises, as a loop head of the code would

    def copy_out(self, source: IO[bytes], target: str) -> None:
        """Write ``source`` to ``target`` beneath the workdir, bounded in size and by the budget."""
        with self.ops.open(target, "wb") as out:
            written = 0
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > MAX_MEMBER_BYTES:
                    raise OSError(errno.EFBIG, "File too large", target)
                out.write(chunk)
                self.check_budget()

    def destination(self, path: object) -> str:
        name = "." if path is None or path == "" else path_name(path)
        if name is None:
            raise TypeError("the extraction path must be a string or a Path")
        return self.ops.relative(name, "extract")

    def parent_dirs(self, target: str) -> None:
        parent = posixpath.dirname(target)
        if parent and parent != ".":
            self.ops.makedirs(parent, exist_ok=True)


# -- gzip, bz2, lzma -----------------------------------------------------------------------------


def _compressed(
    files: Files,
    value: object,
    mode: str,
    make: Callable[[Any, str], Any],
    text: tuple[str | None, str | None, str | None] | None,
    caller: str,
) -> WorkdirFile:
    """A compressed file on ``value``, as a ``WorkdirFile`` view (text-wrapped on request)."""
    binary = _binary(mode)
    raw, owned = files.stream(value, binary, caller)
    try:
        handle = make(raw, binary)
    except BaseException:
        if owned:
            raw.close()
        raise
    if owned:
        # The library closes a file it opened itself; this one it was handed.
        if isinstance(handle, gzip.GzipFile):
            handle.myfileobj = raw
        else:
            handle._closefp = True
    if text is not None:
        encoding, errors, newline = text
        handle = io.TextIOWrapper(handle, encoding or "utf-8", errors, newline)
    return WorkdirFile._wrap(handle, name=path_name(value) or "")


def _text_options(
    mode: str, encoding: str | None, errors: str | None, newline: str | None
) -> tuple[str | None, str | None, str | None] | None:
    if "t" in mode:
        if "b" in mode:
            raise ValueError(f"invalid mode: {mode!r}")
        return encoding, errors, newline
    if encoding is not None or errors is not None or newline is not None:
        raise ValueError("encoding, errors and newline are for text mode only")
    return None


def _lzma_maker(
    format: int | None, check: int, preset: int | None, filters: object
) -> Callable[[Any, str], lzma.LZMAFile]:
    """What makes an ``lzma.LZMAFile`` on a stream, with the options both ``lzma`` views take."""
    return functools.partial(
        lzma.LZMAFile,
        format=format,
        check=check,
        preset=preset,
        filters=filters,  # type: ignore[arg-type]
    )


def _gzip_file(raw: Any, mode: str, **options: Any) -> gzip.GzipFile:
    """``gzip.GzipFile`` on a stream (the class takes its file object by keyword only)."""
    return gzip.GzipFile(fileobj=raw, mode=mode, **options)


def compression_views(files: Files) -> dict[str, dict[str, object]]:
    def leveled_open(make: Callable[..., Any], caller: str) -> Callable[..., WorkdirFile]:
        """``gzip.open`` or ``bz2.open`` (the two take the same arguments) over ``make``."""

        def open_view(
            filename: object,
            mode: str = "rb",
            compresslevel: int = 9,
            encoding: str | None = None,
            errors: str | None = None,
            newline: str | None = None,
        ) -> WorkdirFile:
            text = _text_options(mode, encoding, errors, newline)
            made = functools.partial(make, compresslevel=compresslevel)
            return _compressed(files, filename, mode, made, text, caller)

        return open_view

    def gzip_file(
        filename: object = None,
        mode: str | None = None,
        compresslevel: int = 9,
        fileobj: object = None,
        mtime: float | None = None,
    ) -> WorkdirFile:
        source = filename if fileobj is None else fileobj
        made = functools.partial(_gzip_file, compresslevel=compresslevel, mtime=mtime)
        return _compressed(files, source, mode or "rb", made, None, "gzip.GzipFile()")

    def bz2_file(filename: object, mode: str = "r", *, compresslevel: int = 9) -> WorkdirFile:
        made = functools.partial(bz2.BZ2File, compresslevel=compresslevel)
        return _compressed(files, filename, mode, made, None, "bz2.BZ2File()")

    def lzma_open(
        filename: object,
        mode: str = "rb",
        *,
        format: int | None = None,
        check: int = -1,
        preset: int | None = None,
        filters: object = None,
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> WorkdirFile:
        text = _text_options(mode, encoding, errors, newline)
        made = _lzma_maker(format, check, preset, filters)
        return _compressed(files, filename, mode, made, text, "lzma.open()")

    def lzma_file(
        filename: object = None,
        mode: str = "r",
        *,
        format: int | None = None,
        check: int = -1,
        preset: int | None = None,
        filters: object = None,
    ) -> WorkdirFile:
        made = _lzma_maker(format, check, preset, filters)
        return _compressed(files, filename, mode, made, None, "lzma.LZMAFile()")

    lzma_names = [n for n in dir(lzma) if n.isupper() and type(getattr(lzma, n)) is int]
    return {
        "gzip": {
            "open": leveled_open(_gzip_file, "gzip.open()"),
            "GzipFile": gzip_file,
            "compress": gzip.compress,
            "decompress": gzip.decompress,
            "BadGzipFile": gzip.BadGzipFile,
        },
        "bz2": {
            "open": leveled_open(bz2.BZ2File, "bz2.open()"),
            "BZ2File": bz2_file,
            "compress": bz2.compress,
            "decompress": bz2.decompress,
            "BZ2Compressor": bz2.BZ2Compressor,
            "BZ2Decompressor": bz2.BZ2Decompressor,
        },
        "lzma": {
            "open": lzma_open,
            "LZMAFile": lzma_file,
            "compress": lzma.compress,
            "decompress": lzma.decompress,
            "LZMACompressor": lzma.LZMACompressor,
            "LZMADecompressor": lzma.LZMADecompressor,
            "LZMAError": lzma.LZMAError,
            "is_check_supported": lzma.is_check_supported,
            **{name: getattr(lzma, name) for name in lzma_names},
        },
    }
