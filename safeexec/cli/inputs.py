"""What ``run`` and ``check`` read, the same way: a file or ``-`` (stdin), UTF-8, a model reply.

Both commands take a model reply (fenced code, a tool-call JSON, or raw code such as a ``.py``
file) and turn it into one action as :class:`~safeexec.session.session.Session` does (extract, then
combine); a directory, a missing file and bytes that are not UTF-8 are the same usage error
whether they come from a file or from stdin.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from safeexec.errors import ConfigurationError
from safeexec.extract import combine, extract
from safeexec.model.values import Action

__all__ = ["read_input", "reply_action"]


def read_input(name: str, *, what: str) -> str:
    """The text of file ``name`` (``-``: stdin) as UTF-8; ``ConfigurationError`` saying why not."""
    if name == "-":
        label, data = "stdin", sys.stdin.buffer.read()
    else:
        path = Path(name)
        if path.is_dir():
            raise ConfigurationError(f"{name!r} is a directory; pass {what}, or '-' for stdin")
        if not path.is_file():
            raise ConfigurationError(f"no such file: {name!r}; pass {what}, or '-' for stdin")
        try:
            label, data = f"file {name!r}", path.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"cannot read {name!r}: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f"{label} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def reply_action(text: str, *, action_id: str) -> Action | None:
    """The one action in a model reply, as a session would run it (``None``: no code in it)."""
    action = combine(extract(text))
    return None if action is None else dataclasses.replace(action, action_id=action_id)
