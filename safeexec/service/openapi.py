"""The service's OpenAPI schema as checked into the repo (``openapi.json`` beside this file).

The schema is generated from the routes; the checked-in copy is what clients in other languages
build against, and a test fails when the two differ. After changing the API, regenerate it with
``python -m safeexec.service.openapi``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from safeexec.service.app import create_app
from safeexec.service.auth import TokenStore
from safeexec.service.config import ServiceConfig

__all__ = ["SCHEMA_PATH", "current_schema", "render"]

SCHEMA_PATH = Path(__file__).with_name("openapi.json")


def current_schema() -> dict[str, Any]:
    """The schema the routes generate (an app built on a throwaway state dir, no backends)."""
    with tempfile.TemporaryDirectory(prefix="safeexec-openapi-") as scratch:
        app = create_app(ServiceConfig(state_dir=Path(scratch) / "state", modes=()), TokenStore([]))
        try:
            return app.api.openapi()
        finally:
            app.request_log.close()


def render(schema: dict[str, Any]) -> str:
    """The schema as the checked-in file holds it (sorted keys, two-space indent)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render(current_schema()), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
