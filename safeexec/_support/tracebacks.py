"""Tracebacks trimmed to the code the model wrote: one rule for the worker, in-process and host.

A frame is kept from the first frame of model code (``<cell-3>``, ``<action>``, ``<string>``; not
``<frozen ...>``) onward, and safeexec's own frames are dropped wherever they are. The worker and
the in-process restricted session apply the rule to a live exception
(:func:`format_exception`); the host applies it again to traceback text found in a run's output
(:func:`trim_traceback_lines`), which may have been printed by anything.
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Sequence

__all__ = [
    "exception_message",
    "format_exception",
    "is_model_file",
    "is_safeexec_file",
    "kept_traceback_lines",
    "trim_traceback_lines",
]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MESSAGE_CHARS = 2000
_MAX_CHAINED_ERRORS = 16
_MAX_GROUPED_ERRORS = 256
_TRACEBACK_START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^  File "(?P<file>[^"]*)", line \d+')


def is_model_file(file: str) -> bool:
    """Code the model wrote: ``<cell-3>``, ``<action>``, ``<string>`` (not ``<frozen ...>``)."""
    return file.startswith("<") and file.endswith(">") and not file.startswith("<frozen")


def is_safeexec_file(file: str) -> bool:
    """A file of this package (by its real location, or by name in text from elsewhere)."""
    if file.startswith(_PACKAGE_DIR + os.sep):
        return True
    return "/safeexec/" in file.replace("\\", "/")


def _kept(files: Sequence[str]) -> list[int]:
    """Indices of the frames to show, given each frame's file name (outermost first)."""
    first = next((i for i, file in enumerate(files) if is_model_file(file)), None)
    if first is None:
        return []
    return [i for i in range(first, len(files)) if not is_safeexec_file(files[i])]


def trim_traceback_lines(lines: list[str]) -> list[str]:
    """``lines`` with every ``Traceback (most recent call last):`` block trimmed by the rule."""
    return [lines[index] for index in kept_traceback_lines(lines)]


def kept_traceback_lines(lines: list[str]) -> list[int]:
    """The indices of the ``lines`` that :func:`trim_traceback_lines` keeps, in order."""
    out: list[int] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(index)
        index += 1
        if line != _TRACEBACK_START:
            continue
        frames: list[tuple[str, list[int]]] = []
        while index < len(lines) and lines[index].startswith("  "):
            match = _FRAME.match(lines[index])
            if match is not None:
                frames.append((match.group("file"), [index]))
            elif frames:
                frames[-1][1].append(index)
            else:
                out.append(index)
            index += 1
        for kept in _kept([file for file, _ in frames]):
            out.extend(frames[kept][1])
    return out


def format_exception(error: BaseException) -> str:
    """The traceback text of ``error`` trimmed by the rule; never raises.

    Bounded however the exception was built: a chain is cut after ``_MAX_CHAINED_ERRORS``
    exceptions (unlinking ``__cause__``/``__context__``) and exception groups with more than
    ``_MAX_GROUPED_ERRORS`` members are shown as their exception line only.
    """
    try:
        _cut_chain(error)
        if not _small_groups(error):
            return f"{type(error).__name__}: {exception_message(error)}\n"
        info = traceback.TracebackException.from_exception(error)
        pending: list[traceback.TracebackException | None] = [info]
        seen: set[int] = set()
        while pending:
            current = pending.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            frames = list(current.stack)
            current.stack = traceback.StackSummary.from_list(
                [frames[i] for i in _kept([f.filename for f in frames])]
            )
            pending += [current.__cause__, current.__context__]
        return "".join(info.format())
    except BaseException:  # a user-defined __str__ or __repr__ may raise anything
        return f"{type(error).__name__}: <traceback unavailable>\n"


def exception_message(error: BaseException) -> str:
    """``str(error)``, capped; ``<unprintable>`` when its ``__str__`` raises."""
    try:
        return str(error)[:_MESSAGE_CHARS]
    except BaseException:
        return "<unprintable>"


def _cut_chain(error: BaseException) -> None:
    """Unlink ``__cause__``/``__context__`` past the first ``_MAX_CHAINED_ERRORS`` exceptions.

    Formatting has no budget of its own: a chain of a million ``raise ... from e`` must not be
    walked whole.
    """
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if len(seen) >= _MAX_CHAINED_ERRORS:
            current.__cause__ = current.__context__ = None
            continue
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]


def _small_groups(error: BaseException) -> bool:
    """Do the exception groups under ``error`` hold at most ``_MAX_GROUPED_ERRORS`` exceptions?

    ``TracebackException`` builds a report for every member, shown or not.
    """
    pending: list[object] = [error]
    count = 0
    while pending:
        current = pending.pop()
        count += 1
        if count > _MAX_GROUPED_ERRORS:
            return False
        if isinstance(current, BaseExceptionGroup):
            members = current.exceptions
            if type(members) is not tuple:
                return False
            pending += members
        if isinstance(current, BaseException):
            pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return True
