"""What a session's code runs on, as data: the environment fingerprint recorded with every step.

The fingerprint names the interpreter, the platform, safeexec's version and every installed
distribution with its version (the sandbox runs the host's interpreter and site-packages), so a
replay can say *why* the same code gave another answer. It is stored once per session as a blob
and referenced from every audit event (``environment_ref``).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Iterator
from functools import cache

from safeexec import __version__

__all__ = ["distribution_changes", "fingerprint", "session_distributions", "with_session"]

_MAX_SESSION_DISTRIBUTIONS = 1000
_MAX_NAME_CHARS = 200


@cache
def fingerprint() -> bytes:
    """This process's environment as canonical JSON (computed once per process)."""
    distributions: dict[str, str] = {}
    for name, version in _installed():
        if name:
            distributions[name.lower().replace("_", "-")] = version
    document = {
        "interpreter": f"{sys.implementation.name}-{platform.python_version()}",
        "platform": f"{platform.system()}-{platform.machine()}",
        "safeexec": __version__,
        "distributions": dict(sorted(distributions.items())),
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _installed() -> Iterator[tuple[str, str]]:
    """``Name`` and ``Version`` of each distribution on ``sys.path``, in the order
    ``importlib.metadata.distributions()`` finds them: from a ``*.dist-info`` or ``*.egg-info``
    directory's ``METADATA``, else its ``PKG-INFO``.

    Read here rather than through ``importlib.metadata``, whose import (with the email package
    and zipfile) cost a one-shot ``safeexec run`` some 10 ms before its first step.
    """
    for entry in sys.path:
        root = os.fspath(entry) or "."
        try:
            children = os.listdir(root)
        except OSError:
            continue  # gone, not a directory, or a zip archive (the stdlib's holds none)
        for child in children:
            if not child.lower().endswith((".dist-info", ".egg-info")):
                continue
            for filename in ("METADATA", "PKG-INFO"):
                try:
                    with open(os.path.join(root, child, filename), encoding="utf-8") as fh:
                        found = _name_and_version(fh)
                except (OSError, UnicodeDecodeError):
                    continue
                yield found
                break


def _name_and_version(lines: Iterable[str]) -> tuple[str, str]:
    """``Name`` and ``Version`` from the top of a core metadata file's lines.

    The email parser ``importlib.metadata`` uses reads the whole file, which made this
    fingerprint most of a one-shot ``safeexec run`` (some 140 distributions); both headers are
    single lines in the header block, which ends at the first blank line, and reading stops
    once both are found.
    """
    found: dict[str, str] = {}
    for line in lines:
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
            if len(found) == 2:
                break
    return found.get("Name", ""), found.get("Version", "")


def session_distributions(workdir: str, site: tuple[str, ...]) -> dict[str, str]:
    """Name and version of each distribution a session installed beneath ``workdir`` (in the
    directory ``site`` names, relative to it), from the ``*.dist-info`` directory names alone.

    The directory is the sandbox's: every step is opened without following links, and no file
    in it is read; a name the sandbox made up is recorded as the string it is, bounded.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(workdir, flags)
    except OSError:
        return {}
    try:
        for part in site:
            child = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = child
        names = os.listdir(fd)
    except OSError:
        return {}
    finally:
        os.close(fd)
    found: dict[str, str] = {}
    for entry in sorted(names)[:_MAX_SESSION_DISTRIBUTIONS]:
        if not entry.endswith(".dist-info"):
            continue
        name, _, version = entry.removesuffix(".dist-info").rpartition("-")
        if name:
            key = name.lower().replace("_", "-")[:_MAX_NAME_CHARS]
            found[key] = version[:_MAX_NAME_CHARS]
    return found


def with_session(base: bytes, installed: dict[str, str]) -> bytes:
    """The fingerprint ``base`` with what the session installed itself (``session_distributions``
    beside the interpreter's ``distributions``); ``base`` when it installed nothing."""
    if not installed:
        return base
    document = json.loads(base)
    document["session_distributions"] = dict(sorted(installed.items()))
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def distribution_changes(recorded: bytes, current: bytes) -> list[str]:
    """What differs between two fingerprints, one line each (``numpy 1.26.4 → 2.0.0``)."""
    try:
        before, after = json.loads(recorded), json.loads(current)
    except ValueError:
        return ["the recorded environment is not a fingerprint"]
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ["the recorded environment is not a fingerprint"]
    changes = [
        f"{key} {before.get(key)} → {after.get(key)}"
        for key in ("interpreter", "platform", "safeexec")
        if before.get(key) != after.get(key)
    ]
    for field in ("distributions", "session_distributions"):
        old, new = before.get(field) or {}, after.get(field) or {}
        if isinstance(old, dict) and isinstance(new, dict):
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
                    changes.append(
                        f"{name} {old.get(name, '(not installed)')} → {new.get(name, '(removed)')}"
                    )
    return changes
