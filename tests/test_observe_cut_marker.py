"""The inline cut marker ``[... N lines (M bytes) cut ...]`` counts exactly the lines and bytes
of the code's own output that the model does not see, whatever the sandbox's cap already left
out: a property over random outputs, caps and budgets, through the capture every backend uses."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeexec.audit.blobs import BlobStore
from safeexec.backends.capping import HeadTailCapture
from safeexec.backends.exec_result import CallRecord, finish, succeeded
from safeexec.model.values import Decision, Limits, Verdict
from safeexec.observe import observe
from safeexec.policy.schema import ObserveConfig

_MARKER = re.compile(r"^\[\.\.\. ([\d,]+) lines \(([\d,]+) bytes\) cut \.\.\.\]$")
_LINE = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


def _observed(output: bytes, cap: int, chunk: int, config: ObserveConfig) -> list[str]:
    """The stdout lines of the observation of a run that printed ``output`` under ``cap``."""
    stdout = HeadTailCapture(cap)
    for start in range(0, len(output), chunk):
        stdout.feed(output[start : start + chunk])  # the pipe's reads, or the sink's writes
    with tempfile.TemporaryDirectory() as scratch:
        blobs = BlobStore(Path(scratch) / "blobs")
        limits = Limits(output_bytes=cap)
        result = finish(
            succeeded(),
            record=CallRecord(),
            stdout=stdout,
            stderr=HeadTailCapture(cap),
            limits=limits,
            blobs=blobs,
            artifacts=(),
            cpu_seconds=0.0,
            wall_seconds=0.0,
        )
        text = observe(
            decision=Decision(verdict=Verdict.ALLOW), result=result, blobs=blobs, config=config
        ).text
    lines = text.split("\n")
    return lines[lines.index("--- stdout ---") + 1 :] if "--- stdout ---" in lines else []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_LINE, max_size=400),
    unterminated=st.one_of(st.none(), _LINE.filter(bool)),
    cap=st.integers(min_value=2, max_value=6000),
    chunk=st.integers(min_value=1, max_value=5000),
    max_lines=st.integers(min_value=8, max_value=60),
    data=st.data(),
)
def test_the_cut_marker_counts_exactly_what_the_model_does_not_see(
    lines: list[str],
    unterminated: str | None,
    cap: int,
    chunk: int,
    max_lines: int,
    data: st.DataObject,
) -> None:
    max_bytes = data.draw(st.integers(min_value=max_lines * 50 + 600, max_value=40_000))
    config = ObserveConfig(max_lines=max_lines, max_bytes=max_bytes, max_line_chars=200)
    original = [*lines, *([] if unterminated is None else [unterminated])]
    sizes = [len(line) + 1 for line in lines] + (
        [] if unterminated is None else [len(original[-1])]
    )
    output = "".join(f"{line}\n" for line in lines) + (unterminated or "")
    shown = _observed(output.encode(), cap, chunk, config)
    if shown and shown[-1] == "[... cut]":
        # The last-resort cut (budgets too small for the layout): a prefix, counted by nobody.
        assert shown[:-2] == original[: len(shown) - 2]
        return
    markers = [i for i, line in enumerate(shown) if _MARKER.match(line)]
    if not markers:
        assert len(output) <= cap
        assert shown == original or (shown == ["(no output)"] and not original) or not shown
        return
    (at,) = markers
    head, tail = shown[:at], shown[at + 1 :]
    match = _MARKER.match(shown[at])
    assert match is not None
    cut_lines, cut_bytes = (int(group.replace(",", "")) for group in match.groups())
    assert head == original[: len(head)]
    assert tail == (original[len(original) - len(tail) :] if tail else [])
    assert cut_lines == len(original) - len(head) - len(tail)
    assert cut_bytes == sum(sizes) - sum(sizes[: len(head)]) - sum(sizes[len(sizes) - len(tail) :])
    assert cut_lines > 0 and cut_bytes > 0
