"""Bearer tokens: loaded from a file or the environment, kept only as sha256 digests.

A token is a long random secret (``new_token``), so a plain sha256 is enough to store it (there
is nothing to brute-force, unlike a password). :meth:`TokenStore.authenticate` compares the
presented token's digest with *every* known digest using :func:`hmac.compare_digest`, so the
time taken says nothing about which token, or how much of one, matched. Only the token's id
(``alice``) ever reaches a log; the token itself is never stored, logged or echoed.

The tokens file is TOML, one table per token id::

    [tokens.alice]
    sha256 = "9f86d0…"          # safeexec serve --hash-token prints it for a token
    max_sessions = 4            # the quota; every key has a default (see Quota)
    max_concurrent_runs = 2
    cpu_seconds = 600.0

``SAFEEXEC_SERVICE_TOKENS`` holds ``id=token`` pairs separated by commas (hashed on load).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from safeexec.errors import ConfigurationError
from safeexec.service.quotas import Quota

__all__ = [
    "TOKENS_ENV",
    "TokenEntry",
    "TokenStore",
    "hash_token",
    "load_tokens",
    "new_token",
    "token_store",
    "tokens_from_env",
]

TOKENS_ENV = "SAFEEXEC_SERVICE_TOKENS"

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HEX = re.compile(r"[0-9a-f]{64}")
_MIN_TOKEN_CHARS = 16
_QUOTA_KEYS = frozenset({"max_sessions", "max_concurrent_runs", "cpu_seconds"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenEntry:
    """One known token: its public id, the sha256 hex digest of the secret, its quota."""

    token_id: str
    sha256: str
    quota: Quota

    def __repr__(self) -> str:  # the digest stays out of reprs and tracebacks
        return f"TokenEntry(token_id={self.token_id!r})"


def hash_token(token: str) -> str:
    """The sha256 hex digest under which ``token`` is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class TokenStore:
    """The known tokens, by digest; an empty store authenticates nobody (default deny)."""

    def __init__(self, entries: Iterable[TokenEntry]) -> None:
        kept: list[TokenEntry] = []
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

    def authenticate(self, token: str | None) -> TokenEntry | None:
        """The entry whose digest equals ``token``'s, compared against every entry alike."""
        if token is None:
            return None
        digest = hash_token(token)
        found: TokenEntry | None = None
        for entry in self._entries:  # no early exit: the same work whichever one matches
            if hmac.compare_digest(digest, entry.sha256):
                found = entry
        return found


def load_tokens(path: Path, *, default_quota: Quota | None = None) -> tuple[TokenEntry, ...]:
    """The tokens in TOML file ``path`` (see the module docstring); precise errors on bad keys."""
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
    base = default_quota or Quota()
    entries: list[TokenEntry] = []
    for token_id, table in tables.items():
        where = f"[tokens.{token_id}] in {path}"
        if not isinstance(table, dict):
            raise ConfigurationError(f"{where} must be a table")
        extra = sorted(set(table) - _QUOTA_KEYS - {"sha256"})
        if extra:
            raise ConfigurationError(
                f"{where}: unknown keys {extra}; known: sha256, {', '.join(sorted(_QUOTA_KEYS))}"
            )
        digest = table.get("sha256")
        if not isinstance(digest, str) or not _HEX.fullmatch(digest):
            raise ConfigurationError(
                f"{where}: sha256 must be 64 lowercase hex digits (safeexec serve "
                "--hash-token prints it); the token itself never goes in the file"
            )
        quota = base.narrowed(where, {k: v for k, v in table.items() if k in _QUOTA_KEYS})
        entries.append(TokenEntry(token_id=_checked_id(token_id), sha256=digest, quota=quota))
    return tuple(entries)


def tokens_from_env(
    environ: Mapping[str, str], *, default_quota: Quota | None = None
) -> tuple[TokenEntry, ...]:
    """The ``id=token`` pairs in ``environ[TOKENS_ENV]`` (none when unset), hashed on load."""
    raw = environ.get(TOKENS_ENV, "").strip()
    entries: list[TokenEntry] = []
    for pair in filter(None, (part.strip() for part in raw.split(","))):
        token_id, sep, token = pair.partition("=")
        if not sep or len(token) < _MIN_TOKEN_CHARS:
            raise ConfigurationError(
                f"{TOKENS_ENV} must hold id=token pairs separated by commas, each token at "
                f"least {_MIN_TOKEN_CHARS} characters (got an entry for id={token_id!r})"
            )
        entries.append(
            TokenEntry(
                token_id=_checked_id(token_id),
                sha256=hash_token(token),
                quota=default_quota or Quota(),
            )
        )
    return tuple(entries)


def _checked_id(token_id: str) -> str:
    if not _ID.fullmatch(token_id):
        raise ConfigurationError(
            f"token id token_id={token_id!r} must be 1-64 letters, digits, '_', '.' or '-'"
        )
    return token_id


def token_store(
    path: Path | None, environ: Mapping[str, str], *, default_quota: Quota | None = None
) -> TokenStore:
    """The tokens in file ``path`` (if given) and in ``environ[TOKENS_ENV]``, together;
    ``ConfigurationError`` when there are none (the service authenticates every request)."""
    entries = (
        *(() if path is None else load_tokens(path, default_quota=default_quota)),
        *tokens_from_env(environ, default_quota=default_quota),
    )
    if not entries:
        raise ConfigurationError(
            f"no tokens: pass --tokens FILE (TOML, [tokens.<id>] sha256 = ...) or set "
            f"{TOKENS_ENV}=id=token; safeexec serve --new-token makes one"
        )
    return TokenStore(entries)
