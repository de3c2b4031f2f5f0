"""Head-and-tail capping: what every backend keeps of a run's output."""

from __future__ import annotations

from safeexec.backends.capping import CappedText, HeadTailCapture


def test_output_within_the_cap_is_kept_whole() -> None:
    capture = HeadTailCapture(10)
    capture.feed(b"0123")
    capture.feed(b"456789")
    assert (capture.value(), capture.truncated, capture.total) == (b"0123456789", False, 10)


def test_longer_output_keeps_head_and_tail_and_counts_the_middle() -> None:
    capture = HeadTailCapture(10)
    for _ in range(100_000):
        capture.feed(b"abcdefghij")
    assert capture.truncated and capture.total == 1_000_000
    assert capture.value() == b"abcde\n[... 999990 bytes omitted ...]\nfghij"
    assert len(capture.tail) <= 5 + (1 << 16) + 10  # memory stays bounded while it streams


def test_a_zero_cap_keeps_only_the_marker() -> None:
    capture = HeadTailCapture(0)
    capture.feed(b"xyz")
    assert capture.value() == b"\n[... 3 bytes omitted ...]\n"


def test_the_text_sink_caps_its_utf8_bytes_the_same_way() -> None:
    sink, capture = CappedText(8), HeadTailCapture(8)
    text = "é" * 50 + "\udcff"
    assert sink.write(text) == len(text)
    capture.feed(text.encode("utf-8", "backslashreplace"))
    assert sink.capture.value() == capture.value() and sink.capture.truncated


def test_the_capture_counts_exactly_the_bytes_and_lines_it_leaves_out() -> None:
    capture = HeadTailCapture(100)
    lines = [f"line {n}\n".encode() for n in range(10_000)]
    for line in lines:
        capture.feed(line)
    data = b"".join(lines)
    omitted_bytes, omitted_lines = capture.omitted()
    kept = capture.value()
    head, _marker, tail = kept.partition(f"\n[... {omitted_bytes} bytes omitted ...]\n".encode())
    assert head + data[len(head) : len(data) - len(tail)] + tail == data
    assert omitted_bytes == len(data) - len(head) - len(tail)
    assert omitted_lines == data[len(head) : len(data) - len(tail)].count(b"\n")
    assert HeadTailCapture(100).omitted() == (0, 0)
