"""Bearer tokens for every face that listens on a socket (the HTTP service, the MCP server).

A token is a long random secret (:func:`new_token`), so a plain sha256 is enough to store it
(there is nothing to brute-force, unlike a password). :meth:`TokenStore.authenticate` compares
the presented token's digest with *every* known digest using :func:`hmac.compare_digest`, so
the time taken says nothing about which token, or how much of one, matched. Only a token's id
(``alice``) ever reaches a log; the token itself is never stored, logged or echoed.

Tokens come from a TOML file, one ``[tokens.<id>]`` table each holding ``sha256`` (and whatever
settings the face reads, e.g. the service's quotas), or from an environment variable holding
``id=token`` pairs separated by commas (hashed on load).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from safeexec.errors import ConfigurationError

__all__ = [
    "Credential",
    "TokenStore",
    "TokenTable",
    "bearer_token",
    "hash_token",
    "new_token",
    "read_tokens_env",
    "read_tokens_file",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HEX = re.compile(r"[0-9a-f]{64}")
_MIN_TOKEN_CHARS = 16


def hash_token(token: str) -> str:
    """The sha256 hex digest under which ``token`` is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value; ``None`` for any other."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


class Credential(Protocol):
    """What a store keeps per token: its public id and the digest of the secret."""

    @property
    def token_id(self) -> str: ...

    @property
    def sha256(self) -> str: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenTable:
    """One token as read from a file or the environment: id, digest, the face's settings."""

    token_id: str
    sha256: str
    settings: Mapping[str, object] = field(default_factory=dict)
    where: str = ""
    """Where it was read (``[tokens.alice] in tokens.toml``), for error messages."""

    def __repr__(self) -> str:  # the digest stays out of reprs and tracebacks
        return f"TokenTable(token_id={self.token_id!r})"


_C = TypeVar("_C", bound=Credential)


class TokenStore(Generic[_C]):
    """The known tokens, by digest; an empty store authenticates nobody (default deny)."""

    def __init__(self, entries: Iterable[_C]) -> None:
        kept: list[_C] = []
        ids: set[str] = set()
        for entry in entries:
            if entry.token_id in ids:
                raise ConfigurationError(
                    f"token id token_id={entry.token_id!r} is given twice; give each token "
                    "its own id"
                )
            if any(hmac.compare_digest(entry.sha256, other.sha256) for other in kept):
                raise ConfigurationError(
                    f"token id token_id={entry.token_id!r} shares its token with another id; "
                    "issue one token per id"
                )
            ids.add(entry.token_id)
            kept.append(entry)
        self._entries = tuple(kept)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.token_id for e in self._entries)

    def authenticate(self, token: str | None) -> _C | None:
        """The entry whose digest equals ``token``'s, compared against every entry alike."""
        if token is None:
            return None
        digest = hash_token(token)
        found: _C | None = None
        for entry in self._entries:  # no early exit: the same work whichever one matches
            if hmac.compare_digest(digest, entry.sha256):
                found = entry
        return found


def read_tokens_file(
    path: Path, *, settings: frozenset[str] = frozenset()
) -> tuple[TokenTable, ...]:
    """The ``[tokens.<id>]`` tables of TOML file ``path``; keys other than ``sha256`` and
    ``settings`` are refused (the token itself never goes in the file)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read tokens file path={str(path)!r}: {exc.strerror or exc}"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"tokens file path={str(path)!r} is not TOML: {exc}") from exc
    unknown = sorted(set(data) - {"tokens"})
    tables = data.get("tokens")
    if unknown or not isinstance(tables, dict):
        raise ConfigurationError(
            f"tokens file path={str(path)!r} must hold only [tokens.<id>] tables "
            f"(unknown keys: {unknown})"
        )
    out: list[TokenTable] = []
    for token_id, table in tables.items():
        where = f"[tokens.{token_id}] in {path}"
        if not isinstance(table, dict):
            raise ConfigurationError(f"{where} must be a table")
        extra = sorted(set(table) - settings - {"sha256"})
        if extra:
            known = ", ".join(["sha256", *sorted(settings)])
            raise ConfigurationError(f"{where}: unknown keys {extra}; known: {known}")
        digest = table.get("sha256")
        if not isinstance(digest, str) or not _HEX.fullmatch(digest):
            raise ConfigurationError(
                f"{where}: sha256 must be 64 lowercase hex digits (safeexec serve "
                "--hash-token prints it); the token itself never goes in the file"
            )
        out.append(
            TokenTable(
                token_id=_checked_id(token_id),
                sha256=digest,
                settings={k: v for k, v in table.items() if k in settings},
                where=where,
            )
        )
    return tuple(out)


def read_tokens_env(environ: Mapping[str, str], name: str) -> tuple[TokenTable, ...]:
    """The ``id=token`` pairs in ``environ[name]`` (none when unset), hashed on load."""
    raw = environ.get(name, "").strip()
    out: list[TokenTable] = []
    for pair in filter(None, (part.strip() for part in raw.split(","))):
        token_id, sep, token = pair.partition("=")
        if not sep or len(token) < _MIN_TOKEN_CHARS:
            raise ConfigurationError(
                f"{name} must hold id=token pairs separated by commas, each token at "
                f"least {_MIN_TOKEN_CHARS} characters (got an entry for id={token_id!r})"
            )
        out.append(TokenTable(token_id=_checked_id(token_id), sha256=hash_token(token), where=name))
    return tuple(out)


def _checked_id(token_id: str) -> str:
    if not _ID.fullmatch(token_id):
        raise ConfigurationError(
            f"token id token_id={token_id!r} must be 1-64 letters, digits, '_', '.' or '-'"
        )
    return token_id
