"""One step's outcome as every face shows it: the observation text, an error flag, the files,
and what the code raised as a value (``name``, ``value``, trimmed ``traceback``).

The text is the observation the model would see anyway (it lists the artifacts and displays);
images — figure artifacts, and the image representation of rich displays (``_repr_png_``,
``display(obj)``) — are attached inline up to a size and count, other artifacts travel as
files. Faces only change the wrapping (MCP content, OpenAI parts, Anthropic blocks, LangChain
artifacts).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from safeexec.audit.blobs import BlobStore
from safeexec.model.values import BlobRef, DisplayKind, ExecError, ExecStatus, Outcome, Verdict

__all__ = [
    "INLINE_IMAGE_TYPES",
    "MAX_INLINE_BYTES",
    "MAX_INLINE_FILES",
    "File",
    "Rendered",
    "render",
]

INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types every model API accepts as image content."""

_TEXTUAL_TYPES = frozenset(
    {"application/json", "application/xml", "application/x-yaml", "application/yaml"}
)

MAX_INLINE_BYTES = 4 * 1024 * 1024
"""Artifacts larger than this are listed in the text only (model APIs cap images near 5 MB)."""

MAX_INLINE_FILES = 8
"""At most this many artifacts travel with one result; the text lists every one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class File:
    """One artifact's bytes, as read back from the blob store (verified against its sha256)."""

    name: str
    media_type: str
    data: bytes

    @property
    def is_image(self) -> bool:
        return self.media_type in INLINE_IMAGE_TYPES

    @property
    def text(self) -> str | None:
        """The content as text, for a textual media type whose bytes are UTF-8; else ``None``."""
        kind = self.media_type
        textual = (
            kind.startswith("text/") or kind in _TEXTUAL_TYPES or kind.endswith(("+json", "+xml"))
        )
        if not textual:
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendered:
    """What a face hands back for one step."""

    text: str
    is_error: bool
    files: tuple[File, ...] = ()
    value: str | None = None
    """The ``text/plain`` repr of the cell's last expression, when it had one."""
    error: ExecError | None = None
    """What the code raised (its class name, message and trimmed traceback), when it raised."""

    @property
    def images(self) -> tuple[File, ...]:
        return tuple(f for f in self.files if f.is_image)

    @property
    def others(self) -> tuple[File, ...]:
        return tuple(f for f in self.files if not f.is_image)


def render(outcome: Outcome, blobs: BlobStore) -> Rendered:
    """The face-neutral view of ``outcome``: an error unless the code ran and ended ``ok``."""
    result = outcome.result
    ran_ok = (
        outcome.decision.verdict is not Verdict.DENY
        and result is not None
        and result.status is ExecStatus.OK
    )
    files: list[File] = []
    seen: set[str] = set()

    def attach(name: str, media_type: str, blob: BlobRef) -> None:
        if len(files) == MAX_INLINE_FILES or blob.size > MAX_INLINE_BYTES or blob.sha256 in seen:
            return
        seen.add(blob.sha256)
        files.append(File(name=name, media_type=media_type, data=blobs.get(blob)))

    value = None
    for artifact in () if result is None else result.artifacts:
        attach(artifact.name, artifact.media_type, artifact.blob)
    for number, display in enumerate(() if result is None else result.displays, start=1):
        image = next((i for t in _IMAGE_ORDER if (i := display.get(t)) is not None), None)
        if image is not None:
            extension = image.media_type.removeprefix("image/")
            attach(f"display-{number}.{extension}", image.media_type, image.blob)
        plain = display.get("text/plain")
        if display.kind is DisplayKind.RESULT and plain is not None and plain.text:
            value = plain.text
    return Rendered(
        text=outcome.observation.text,
        is_error=not ran_ok,
        files=tuple(files),
        value=value,
        error=None if result is None else result.error,
    )


# The representation a display is shown as, when it has several.
_IMAGE_ORDER = ("image/png", "image/jpeg", "image/webp", "image/gif")
