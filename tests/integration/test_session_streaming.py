"""Streaming: output reaches ``on_output`` and ``Session.stream`` while the cell still runs."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from safeexec.audit.log import AuditLog
from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.backends.streaming import OutputTap
from safeexec.errors import ConfigurationError
from safeexec.model.values import ExecStatus, Limits, Outcome, OutputChunk, StreamName
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import BackendsConfig, Policy, PolicyInfo
from safeexec.session.session import Session

FAKE_POLICY = Policy(
    info=PolicyInfo(id="unit"),
    backends=BackendsConfig(allowed=("fake",), default="fake"),
    limits=Limits(cpu_seconds=2.0, wall_seconds=4.0),
    digest="9" * 64,
)

# Prints, then waits (bounded by the step's wall limit) for a file ``go`` that only the host's
# callback writes on seeing the first line: it finishes only if that line was streamed mid-run.
WAITS_FOR_GO = (
    "import time\nprint('ready')\n"
    "for _ in range(600):\n"
    "    try:\n        open('go').close()\n        break\n"
    "    except OSError:\n        time.sleep(0.01)\n"
    "else:\n    raise TimeoutError('the first line was not streamed')\n"
    "print('after')\n"
)


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def _text(chunks: list[OutputChunk], stream: StreamName = StreamName.STDOUT) -> str:
    return "".join(chunk.text for chunk in chunks if chunk.stream is stream)


def _policy_with_in_process() -> Policy:
    base = load_policy("default")
    allowed = (*base.backends.allowed, "restricted-inprocess")
    return dataclasses.replace(base, backends=dataclasses.replace(base.backends, allowed=allowed))


@pytest.mark.parametrize("mode", ["native", "restricted", "restricted-inprocess"])
def test_output_is_delivered_while_the_cell_runs(tmp_path: Path, mode: str) -> None:
    chunks: list[OutputChunk] = []
    policy = _policy_with_in_process()
    with Session(policy=policy, mode=mode, state_dir=tmp_path / "state") as session:

        def on_output(chunk: OutputChunk) -> None:
            chunks.append(chunk)
            if "ready" in chunk.text:
                session.files.write("go", b"")

        outcome = session.run(fenced(WAITS_FOR_GO), on_output=on_output)
    assert outcome.result is not None
    assert outcome.result.status is ExecStatus.OK, outcome.observation.text
    assert _text(chunks) == "ready\nafter\n"
    assert "ready\nafter" in outcome.observation.text  # the result keeps the full output too


def test_stdout_and_stderr_arrive_as_separate_streams(tmp_path: Path) -> None:
    chunks: list[OutputChunk] = []
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        session.run(
            fenced("import sys\nprint('out')\nprint('err', file=sys.stderr)\n"),
            on_output=chunks.append,
        )
    assert _text(chunks, StreamName.STDOUT) == "out\n"
    assert _text(chunks, StreamName.STDERR) == "err\n"


def test_streamed_output_is_cleaned_like_the_observation(tmp_path: Path) -> None:
    chunks: list[OutputChunk] = []
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        session.run(
            fenced("print('\\x1b[31mred\\x1b[0m \\u202e bell\\x07')\n"), on_output=chunks.append
        )
    assert _text(chunks) == "red \ufffd bell\ufffd\n"


@pytest.mark.parametrize("mode", ["native", "restricted", "restricted-inprocess"])
def test_streaming_stops_at_the_output_cap_with_a_marker(tmp_path: Path, mode: str) -> None:
    base = _policy_with_in_process()
    policy = dataclasses.replace(base, limits=dataclasses.replace(base.limits, output_bytes=1000))
    chunks: list[OutputChunk] = []
    with Session(policy=policy, mode=mode, state_dir=tmp_path / "state") as session:
        outcome = session.run(
            fenced("for _ in range(100):\n    print('x' * 500)\n1 / 0\n"),
            on_output=chunks.append,
        )
    text = _text(chunks)
    assert text.startswith("x" * 500 + "\n" + "x" * 499)
    assert text.count("x") == 999  # 1,000 bytes: the cap, as the final result's
    assert "not streamed" in text and text.endswith("...]\n")
    assert _text(chunks, StreamName.STDERR).endswith("ZeroDivisionError: division by zero\n")
    assert outcome.result is not None and outcome.result.truncated


def test_in_process_restricted_streams_each_print_as_it_is_written(tmp_path: Path) -> None:
    seen: list[tuple[str, bool]] = []
    policy = _policy_with_in_process()
    with Session(policy=policy, mode="restricted-inprocess", state_dir=tmp_path / "s") as session:

        def on_output(chunk: OutputChunk) -> None:
            # What the workdir holds when the chunk arrives: the cell writes 'mark' after 'one'.
            seen.append((chunk.text, (session.workdir / "mark").exists()))

        session.run(
            fenced("print('one')\nopen('mark', 'w').close()\nprint('two')\n"),
            on_output=on_output,
        )
    assert seen == [("one\n", False), ("two\n", True)]


def test_a_tap_joins_a_character_split_between_reads() -> None:
    chunks: list[OutputChunk] = []
    tap = OutputTap(chunks.append, StreamName.STDOUT, cap=100)
    data = "é€😀".encode()
    for i in range(len(data)):
        tap.feed(data[i : i + 1])
    tap.close()
    assert "".join(c.text for c in chunks) == "é€😀"


def test_a_tap_flushes_an_incomplete_last_character_as_a_replacement() -> None:
    chunks: list[OutputChunk] = []
    tap = OutputTap(chunks.append, StreamName.STDERR, cap=100)
    tap.feed(b"ok\xe2\x82")
    tap.close()
    assert "".join(c.text for c in chunks) == "ok\ufffd"
    assert all(c.stream is StreamName.STDERR for c in chunks)


def test_a_mode_that_cannot_stream_delivers_its_output_when_the_cell_ends(tmp_path: Path) -> None:
    backend = FakeBackend(lambda request: FakeReply(stdout="out\n", stderr="err\n"))
    chunks: list[OutputChunk] = []
    with Session(policy=FAKE_POLICY, backends={"fake": backend}, state_dir=tmp_path) as session:
        session.run(fenced("print(1)\n"), on_output=chunks.append)
    assert chunks == [
        OutputChunk(stream=StreamName.STDOUT, text="out\n"),
        OutputChunk(stream=StreamName.STDERR, text="err\n"),
    ]


def test_a_denied_step_streams_nothing(tmp_path: Path) -> None:
    chunks: list[OutputChunk] = []
    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        outcome = session.run(fenced("eval('1')\n"), on_output=chunks.append)
    assert outcome.result is None
    assert chunks == []


def test_a_raising_callback_stops_delivery_yet_the_step_is_recorded_and_in_step(
    tmp_path: Path,
) -> None:
    seen: list[OutputChunk] = []

    def broken(chunk: OutputChunk) -> None:
        seen.append(chunk)
        raise ValueError("callback bug")

    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        with pytest.raises(ValueError, match="callback bug"):
            session.run(fenced("x = 5\nprint('a')\nprint('b')\n"), on_output=broken)
        assert len(seen) == 1  # delivery stopped at the first failure
        outcome = session.run(fenced("print(x)\n"))
        events = AuditLog(session.audit.path).read()
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK
    assert "--- stdout ---\n5" in outcome.observation.text  # its own output, state kept
    assert len(events) == 2


def test_stream_yields_chunks_then_the_outcome_last(tmp_path: Path) -> None:
    async def collect(session: Session) -> list[OutputChunk | Outcome]:
        return [item async for item in session.stream(fenced("print('one')\nprint('two')\n"))]

    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        items = asyncio.run(collect(session))
    *chunks, last = items
    assert isinstance(last, Outcome)
    assert last.result is not None and last.result.status is ExecStatus.OK
    assert all(isinstance(chunk, OutputChunk) for chunk in chunks)
    assert "".join(chunk.text for chunk in chunks if isinstance(chunk, OutputChunk)) == (
        "one\ntwo\n"
    )


def test_leaving_a_stream_early_interrupts_the_cell_and_keeps_the_session_in_step(
    tmp_path: Path,
) -> None:
    looping = fenced(
        "import time\nkept = 'yes'\nprint('started')\nfor _ in range(2000):\n    time.sleep(0.05)\n"
    )

    async def first_chunk(session: Session) -> OutputChunk | Outcome:
        stream = session.stream(looping)
        try:
            return await anext(stream)
        finally:
            await stream.aclose()  # what `break` out of `async for` does when the loop ends

    with Session(policy="default", mode="native", state_dir=tmp_path / "state") as session:
        first = asyncio.run(first_chunk(session))
        after = session.run(fenced("print(kept)\n"))
        events = AuditLog(session.audit.path).read()
    assert first == OutputChunk(stream=StreamName.STDOUT, text="started\n")
    assert [event.status for event in events] == [ExecStatus.INTERRUPTED, ExecStatus.OK]
    assert after.result is not None and "--- stdout ---\nyes" in after.observation.text


def test_stream_raises_what_the_step_raised(tmp_path: Path) -> None:
    backend = FakeBackend(lambda request: FakeReply(stdout="ran\n"))

    async def collect(session: Session) -> list[OutputChunk | Outcome]:
        return [item async for item in session.stream(fenced("print(1)\n"))]

    session = Session(policy=FAKE_POLICY, backends={"fake": backend}, state_dir=tmp_path)
    session.close()
    with pytest.raises(ConfigurationError, match="is closed"):
        asyncio.run(collect(session))


@pytest.mark.parametrize("mode", ["native", "restricted", "restricted-inprocess"])
def test_a_capped_result_and_its_observation_count_what_was_cut_exactly(
    tmp_path: Path, mode: str
) -> None:
    base = _policy_with_in_process()
    policy = dataclasses.replace(base, limits=dataclasses.replace(base.limits, output_bytes=4096))
    with Session(policy=policy, mode=mode, state_dir=tmp_path / "state") as session:
        outcome = session.run(fenced("for i in range(100_000):\n    print(i)\n"))
    result = outcome.result
    assert result is not None and result.stdout_cut is not None and result.stderr_cut is None
    printed = "".join(f"{i}\n" for i in range(100_000)).encode()
    assert result.usage.output_bytes == len(printed)
    assert result.stdout_cut.omitted_bytes == len(printed) - 4096
    kept = session.blobs.get(result.stdout)
    head = kept[: kept.index(b"\n[... ")]
    cut_middle = printed[len(head) : len(head) + result.stdout_cut.omitted_bytes]
    assert result.stdout_cut.omitted_lines == cut_middle.count(b"\n")
    assert f"{result.stdout_cut.omitted_lines:,} lines" in outcome.observation.text
    # The inline marker counts the printed lines the model does not see, the cap's included.
    shown = outcome.observation.text.split("--- stdout ---\n", 1)[1].split("\n")
    (at,) = [i for i, line in enumerate(shown) if line.startswith("[... ")]
    head, tail = shown[:at], shown[at + 1 :]
    assert head == [str(i) for i in range(len(head))]
    assert tail == [str(i) for i in range(100_000 - len(tail), 100_000)]
    hidden = range(len(head), 100_000 - len(tail))
    hidden_bytes = sum(len(f"{i}\n") for i in hidden)
    assert shown[at] == f"[... {len(hidden):,} lines ({hidden_bytes:,} bytes) cut ...]"
