"""Views of ``sys``, ``platform``, ``locale`` and ``traceback`` for sandboxed code.

Read-only facts about the interpreter (``sys.version``, ``sys.getsizeof``, ``platform.system()``),
``sys.stdout``/``sys.stderr`` that write where ``print`` writes, and tracebacks formatted by the
runtime's own trimming rule (``_support/tracebacks.py``). Nothing here is the real module or holds
it: no ``sys.modules``, no real ``sys.path`` (the host's paths), no ``settrace``, no
``setrecursionlimit``, no ``locale.setlocale``.
"""

from __future__ import annotations

import locale
import platform
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from safeexec._support.tracebacks import format_exception
from safeexec.restricted.guards import GuardError, RuntimeClass

if TYPE_CHECKING:
    from safeexec.restricted.cell import Cell


class _Stream(metaclass=RuntimeClass):
    """``sys.stdout``/``sys.stderr``: ``write`` and ``flush`` to the run's output."""

    def __init__(self, cell: Cell) -> None:
        self._cell = cell

    def __reduce__(self) -> str | tuple[object, ...]:
        raise GuardError("runtime objects cannot be pickled or copied in restricted mode")

    def write(self, text: str) -> int:
        if type(text) is not str:
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._cell.sink.write(text)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush: output goes straight to the run's sink."""

    def isatty(self) -> bool:
        return False


def _format_exc(limit: object = None, chain: bool = True) -> str:
    error = sys.exc_info()[1]
    return "NoneType: None\n" if error is None else format_exception(error)


def _format_exception(exc: object, /, *args: object, **kwargs: object) -> list[str]:
    if not isinstance(exc, BaseException):
        raise TypeError("format_exception() takes an exception in restricted mode")
    return format_exception(exc).splitlines(keepends=True)


def _format_exception_only(exc: object, /, *args: object) -> list[str]:
    if not isinstance(exc, BaseException):
        raise TypeError("format_exception_only() takes an exception in restricted mode")
    return format_exception(exc).splitlines(keepends=True)[-1:]


def environment_views(cell: Cell) -> Mapping[str, dict[str, object]]:
    """The attributes of each view, for one executor (``print`` output goes to its sink)."""
    stdout = _Stream(cell)

    def print_exc(limit: object = None, file: object = None, chain: bool = True) -> None:
        (file if isinstance(file, _Stream) else stdout).write(_format_exc())

    return {
        "sys": {
            "version": sys.version,
            "version_info": sys.version_info,
            "hexversion": sys.hexversion,
            "platform": sys.platform,
            "byteorder": sys.byteorder,
            "maxsize": sys.maxsize,
            "maxunicode": sys.maxunicode,
            "float_info": sys.float_info,
            "int_info": sys.int_info,
            "path": list,  # made anew on every read (see allowlist.FRESH_VALUES)
            "argv": lambda: [""],
            "stdout": stdout,
            "stderr": _Stream(cell),
            "getsizeof": sys.getsizeof,
            "getrecursionlimit": sys.getrecursionlimit,
            "getdefaultencoding": sys.getdefaultencoding,
            "getfilesystemencoding": sys.getfilesystemencoding,
        },
        "platform": {
            name: _constant(getattr(platform, name)())
            for name in ("python_version", "python_implementation", "system", "machine")
        },
        "locale": {
            "getpreferredencoding": lambda do_setlocale=True: locale.getpreferredencoding(False),
            "getencoding": lambda: locale.getpreferredencoding(False),
        },
        "traceback": {
            "format_exc": _format_exc,
            "print_exc": print_exc,
            "format_exception": _format_exception,
            "format_exception_only": _format_exception_only,
        },
    }


def _constant(value: str) -> object:
    def read() -> str:
        return value

    return read
