"""Sandboxed code writes its own frames on the worker's channel to the host (fd 3).

The channel is a trust boundary: the code owns the worker process, so the host must survive
anything on it (a length of 4 GiB, bytes that are not JSON, JSON nested past any recursion
limit, operations it never asked for, half a frame and then silence, tool calls for tools that
were never granted) by killing that worker, never by crashing or hanging past the limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from safeexec.model.values import ExecStatus

if TYPE_CHECKING:
    from escape_support import Sandbox

CHANNEL = """
import socket, struct, time
channel = socket.socket(fileno=3)
def frame(body):
    channel.sendall(struct.pack('>I', len(body)) + body)
"""

BROKEN = {
    "a length of 4 GiB": "channel.sendall(b'\\xff\\xff\\xff\\xff')",
    "bytes that are not JSON": "frame(b'\\xff\\xfe{not json')",
    "JSON nested 200000 deep": "frame(b'[' * 200000 + b']' * 200000)",
    "a JSON value that is not an object": "frame(b'[1, 2, 3]')",
    "an operation the host never asked for": 'frame(b\'{"op": "spawn"}\')',
    "a done frame nested past recursion": (
        'frame(b\'{"op":"done","ok":false,"error":\' + b\'{"a":\' * 100000 + b\'1\' '
        "+ b'}' * 100001)"
    ),
}


@pytest.mark.parametrize("payload", list(BROKEN.values()), ids=list(BROKEN))
def test_a_malformed_frame_kills_the_worker_not_the_host(sandbox: Sandbox, payload: str) -> None:
    ran = sandbox.run(CHANNEL + payload + "\ntime.sleep(30)\n", wall_seconds=20)
    assert ran.result.status is ExecStatus.KILLED, ran.text
    assert "channel protocol" in ran.result.message
    sandbox.assert_usable()


def test_half_a_frame_then_silence_ends_at_the_wall_limit(sandbox: Sandbox) -> None:
    ran = sandbox.run(
        # A length the cell's own answer (sent after its interrupt) cannot complete.
        CHANNEL + "channel.sendall(struct.pack('>I', 60_000) + b'{')\ntime.sleep(60)\n",
        wall_seconds=1,
    )
    assert ran.result.status is ExecStatus.TIMEOUT, ran.text
    sandbox.assert_usable()


def test_a_forged_call_to_a_tool_never_granted_is_refused(sandbox: Sandbox) -> None:
    code = (
        CHANNEL
        + """
import json
frame(json.dumps({"op": "tool", "name": "delete_everything",
                  "args": {"args": ["/"], "kwargs": {}}}).encode())
(length,) = struct.unpack('>I', channel.recv(4))
reply = json.loads(channel.recv(length))
print(reply["ok"], reply["error"])
"""
    )
    ran = sandbox.run(code)
    assert ran.result.status is ExecStatus.OK, ran.text
    assert ran.stdout.startswith("False no tool named 'delete_everything' is granted"), ran.text
    assert ran.result.events == ()
    sandbox.assert_usable()
