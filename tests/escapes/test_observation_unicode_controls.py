"""Code prints C1 controls, bidi controls and Unicode line separators at the model and terminal.

An 8-bit CSI (U+009B) drives a terminal like ``ESC [``; bidi embeddings, overrides and isolates
(U+202A-E, U+2066-9, U+200E/F, U+061C) make a reader see text in another order than it is; U+2028/9
break one line in two for many readers. The observation passed them through (found-item 5); it
now escapes them one for one, like C0 controls (and drops whole 8-bit sequences like 7-bit ones).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tool_support import fenced, tool_session

from safeexec.backends.native import NativeBackend

UNSAFE = {
    "c1-csi": "\u009b2J\u009b31m",
    "c1-other": "\u0085\u0090\u009d0;t\u009c",
    "bidi-override": "\u202e\u202d\u202a\u202b\u202c",
    "bidi-isolate": "\u2066\u2067\u2068\u2069",
    "bidi-mark": "\u200e\u200f\u061c",
    "line-separator": "\u2028\u2029",
}
# What the stdout line shows: whole 8-bit CSI and OSC sequences go (like ESC [ ... ones), every
# other control becomes one U+FFFD.
SHOWN = {
    "c1-csi": "",
    "c1-other": "\ufffd\ufffd",
    "bidi-override": "\ufffd" * 5,
    "bidi-isolate": "\ufffd" * 4,
    "bidi-mark": "\ufffd" * 3,
    "line-separator": "\ufffd" * 2,
}
_BANNED = set("".join(UNSAFE.values())) - set("2J31m0;t")


@pytest.mark.parametrize("kind", sorted(UNSAFE))
def test_printed_controls_reach_the_model_escaped(
    backend: NativeBackend, tmp_path: Path, kind: str
) -> None:
    text = UNSAFE[kind]
    code = f"print('out:' + {text!r} + ':end')\nraise ValueError('err:' + {text!r})"
    with tool_session(backend, tmp_path) as session:
        outcome = session.run(fenced(code))
    observed = outcome.observation.text
    assert "out:" in observed and "err:" in observed, observed
    assert not _BANNED & set(observed), [hex(ord(c)) for c in _BANNED & set(observed)]
    assert f"\nout:{SHOWN[kind]}:end\n" in observed
