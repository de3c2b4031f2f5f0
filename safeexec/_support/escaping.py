"""Untrusted text made safe to hand a reader: the one home of escaping control characters.

Apart from :mod:`safeexec.observe` (which cleans a run's output with it) so that the commands
printing code or log text (``check``, ``log``) escape it without loading the observation step.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls"]

# What no reader should be handed raw: C0 controls but tab and newline, DEL, the C1 controls
# (U+0080-U+009F: 8-bit CSI, NEL, ...), the bidi marks, embeddings, overrides and isolates that
# reorder what a reader sees (U+061C, U+200E/F, U+202A-E, U+2066-9), and the Unicode line and
# paragraph separators (U+2028/9) that split one line in two for many readers.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def escape_controls(text: str) -> str:
    """``text`` with every control a reader must not be handed raw (C0 but tab and newline, DEL,
    C1, bidi controls, U+2028/9) replaced by U+FFFD, one for one, so columns stay where they were.

    Observations use it, and so does every CLI text output.
    """
    return _CONTROL.sub("\ufffd", text)
