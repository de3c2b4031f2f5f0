"""Rich values in the worker: an object's MIME bundle, by Jupyter's ``_repr_*_`` protocol.

Runs inside the confined session process only (the host never imports it and never calls a
sandbox object's methods: it receives the finished bundle as a ``display`` frame). Every
representation the object offers is tried (``_repr_mimebundle_``, ``_repr_html_``,
``_repr_markdown_``, ``_repr_json_``, ``_repr_png_``, ...; a matplotlib figure renders as PNG);
one that raises or returns the wrong type is left out, and the bundle is kept within
``MAX_BUNDLE_BYTES`` of encoded payload, ``text/plain`` first, so its frame always fits the
host's frame limit.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable

from safeexec.sandbox.protocol import MAX_DISPLAY_ITEMS, Display, is_textual

__all__ = ["MAX_BUNDLE_BYTES", "bundle_of"]

MAX_BUNDLE_BYTES = 4 * 1024 * 1024
"""The JSON-encoded payload of one bundle (the host's frame limit is twice that)."""
_MAX_PLAIN_CHARS = 64 * 1024

# Looked up on the type, as IPython does: an object answering every attribute (a mock, a proxy)
# must not make up representations.
_REPR_METHODS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
)


def bundle_of(obj: object, *, kind: str) -> Display:
    """The ``display`` frame for ``obj``: every representation it offers, within budget.

    ``KeyboardInterrupt`` (the cell's interrupt) passes through; other exceptions of the
    object's own methods only leave that representation out.
    """
    offered: list[tuple[str, object]] = [("text/plain", _plain(obj))]
    offered.extend(_from_mimebundle(obj))
    for name, media_type in _REPR_METHODS:
        method = getattr(type(obj), name, None)
        if callable(method):
            offered.append((media_type, _call(method, obj)))
    figure_png = _figure_png(obj)
    if figure_png is not None:
        offered.append(("image/png", figure_png))
    data: dict[str, str] = {}
    truncated = False
    room = MAX_BUNDLE_BYTES
    for media_type, value in offered:
        if media_type in data or value is None:
            continue
        payload = _payload(media_type, value)
        if payload is None:
            continue
        size = len(json.dumps(payload))
        if size > room or len(data) >= MAX_DISPLAY_ITEMS:
            truncated = True
            continue
        data[media_type] = payload
        room -= size
    return Display(kind=kind, data=data, truncated=truncated)


def _call(method: Callable[[object], object], obj: object) -> object:
    try:
        return method(obj)
    except Exception:
        return None


def _plain(obj: object) -> str:
    try:
        text = repr(obj)
    except Exception as exc:
        text = f"<{type(obj).__name__} object: repr() raised {type(exc).__name__}>"
    if not isinstance(text, str):
        return f"<{type(obj).__name__} object>"
    if len(text) > _MAX_PLAIN_CHARS:
        half = _MAX_PLAIN_CHARS // 2
        cut = len(text) - 2 * half
        text = f"{text[:half]}\n[... {cut:,} chars cut ...]\n{text[-half:]}"
    return text


def _from_mimebundle(obj: object) -> list[tuple[str, object]]:
    method = getattr(type(obj), "_repr_mimebundle_", None)
    if not callable(method):
        return []
    bundle = _call(method, obj)
    if isinstance(bundle, tuple) and bundle:  # (data, metadata)
        bundle = bundle[0]
    if not isinstance(bundle, dict):
        return []
    return [(key, value) for key, value in bundle.items() if isinstance(key, str)]


def _figure_png(obj: object) -> bytes | None:
    """A matplotlib figure (which has no ``_repr_png_``; IPython renders it) as PNG bytes."""
    if not type(obj).__module__.startswith("matplotlib.figure"):
        return None
    savefig = getattr(obj, "savefig", None)
    if not callable(savefig):
        return None
    buffer = io.BytesIO()
    try:
        savefig(buffer, format="png")
    except Exception:
        return None
    return buffer.getvalue()


def _payload(media_type: str, value: object) -> str | None:
    """The wire form of one representation: text as is, binary as base64; ``None`` if unusable."""
    if media_type == "application/json" or media_type.endswith("+json"):
        if isinstance(value, str):
            return value
        try:
            return json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return None
    if is_textual(media_type):
        return value if type(value) is str else None
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if type(value) is str:  # already base64, as IPython's formatters return it
        try:
            base64.b64decode(value, validate=True)
        except ValueError:
            return None
        return value
    return None
