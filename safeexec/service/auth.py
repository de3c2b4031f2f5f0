"""The service's bearer tokens: :mod:`safeexec._support.bearer`'s store, each token with its quota.

The tokens file is TOML, one table per token id::

    [tokens.alice]
    sha256 = "9f86d0…"          # safeexec serve --hash-token prints it for a token
    max_sessions = 4            # the quota; every key has a default (see Quota)
    max_concurrent_runs = 2
    cpu_seconds = 600.0

``SAFEEXEC_SERVICE_TOKENS`` holds ``id=token`` pairs separated by commas (hashed on load).
Hashing, the constant-time lookup and the file format are :mod:`safeexec._support.bearer`'s, shared
with the MCP server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from safeexec._support import bearer
from safeexec._support.bearer import hash_token, new_token
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

_QUOTA_KEYS = frozenset({"max_sessions", "max_concurrent_runs", "cpu_seconds"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenEntry:
    """One known token: its public id, the sha256 hex digest of the secret, its quota."""

    token_id: str
    sha256: str
    quota: Quota

    def __repr__(self) -> str:  # the digest stays out of reprs and tracebacks
        return f"TokenEntry(token_id={self.token_id!r})"


TokenStore = bearer.TokenStore[TokenEntry]
"""The service's known tokens (see :class:`safeexec._support.bearer.TokenStore`)."""


def load_tokens(path: Path, *, default_quota: Quota | None = None) -> tuple[TokenEntry, ...]:
    """The tokens in TOML file ``path`` (see the module docstring); precise errors on bad keys."""
    base = default_quota or Quota()
    return tuple(
        TokenEntry(
            token_id=table.token_id,
            sha256=table.sha256,
            quota=base.narrowed(table.where, table.settings),
        )
        for table in bearer.read_tokens_file(path, settings=_QUOTA_KEYS)
    )


def tokens_from_env(
    environ: Mapping[str, str], *, default_quota: Quota | None = None
) -> tuple[TokenEntry, ...]:
    """The ``id=token`` pairs in ``environ[TOKENS_ENV]`` (none when unset), hashed on load."""
    return tuple(
        TokenEntry(token_id=t.token_id, sha256=t.sha256, quota=default_quota or Quota())
        for t in bearer.read_tokens_env(environ, TOKENS_ENV)
    )


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
