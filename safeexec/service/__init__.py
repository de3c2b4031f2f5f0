"""safeexec as an authenticated, multi-tenant HTTP service (the ``service`` extra).

``create_app(ServiceConfig(...), TokenStore(...))`` is the ASGI app; ``safeexec serve`` runs it
under uvicorn. Each module has one job: ``auth`` (bearer tokens, hashed), ``quotas`` (per-token
limits), ``sessions`` (ownership and idle bookkeeping), ``runs`` (blocking calls off the event
loop, client disconnects), ``body_limit`` (413s), ``access_log`` (one line per request),
``runtime`` (the operations), ``schemas`` (the wire shapes), ``app`` (the routes).
"""

from __future__ import annotations

from safeexec.service.app import ServiceApp, create_app
from safeexec.service.auth import TokenEntry, TokenStore, hash_token, load_tokens, new_token
from safeexec.service.config import ServiceConfig
from safeexec.service.quotas import Quota

__all__ = [
    "Quota",
    "ServiceApp",
    "ServiceConfig",
    "TokenEntry",
    "TokenStore",
    "create_app",
    "hash_token",
    "load_tokens",
    "new_token",
]
