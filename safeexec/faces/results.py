"""One step's outcome as every face shows it: the observation text, an error flag, the files.

The text is the observation the model would see anyway (it lists the artifacts); images are
attached inline up to a size and count, other artifacts travel as files. Faces only change the
wrapping (MCP content, OpenAI parts, Anthropic blocks, LangChain artifacts).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from safeexec.blobs import BlobStore
from safeexec.model import ExecStatus, Outcome, Verdict

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
    for artifact in () if result is None else result.artifacts:
        if len(files) == MAX_INLINE_FILES or artifact.blob.size > MAX_INLINE_BYTES:
            continue
        data = blobs.get(artifact.blob)
        files.append(File(name=artifact.name, media_type=artifact.media_type, data=data))
    return Rendered(text=outcome.observation.text, is_error=not ran_ok, files=tuple(files))
