"""Frames from an untrusted worker: bounded, strict, never more than JSON objects."""

from __future__ import annotations

import socket

import pytest

from safeexec.sandbox.channel import (
    FrameDecoder,
    ProtocolError,
    encode_frame,
    recv_frame,
    recv_frame_with_fds,
    send_frame,
    send_frame_with_fds,
)


def test_frames_split_anywhere_are_reassembled() -> None:
    data = encode_frame({"op": "done", "ok": True}) + encode_frame({"op": "tool", "name": "x"})
    decoder = FrameDecoder()
    frames = [frame for byte in data for frame in decoder.feed(bytes([byte]))]
    assert frames == [{"op": "done", "ok": True}, {"op": "tool", "name": "x"}]


def test_an_oversized_frame_is_refused_before_it_is_buffered() -> None:
    decoder = FrameDecoder(max_frame_bytes=10)
    with pytest.raises(ProtocolError):
        decoder.feed((1 << 30).to_bytes(4, "big"))


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b"[" * 100_000 + b"]" * 100_000])
def test_anything_but_a_json_object_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        FrameDecoder().feed(len(body).to_bytes(4, "big") + body)


def test_blocking_helpers_round_trip_with_descriptors() -> None:
    left, right = socket.socketpair()
    reader, writer = socket.socketpair()
    with left, right, reader, writer:
        send_frame_with_fds(left, {"op": "started", "pid": 7}, [writer.fileno()])
        message, fds = recv_frame_with_fds(right)
        assert message == {"op": "started", "pid": 7} and len(fds) == 1
        send_frame(left, {"op": "run", "code": "1"})
        assert recv_frame(right) == {"op": "run", "code": "1"}
        left.close()
        with pytest.raises(EOFError):
            recv_frame(right)
        import os

        os.close(fds[0])
