"""The OpenAI-compatible client against a stub chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from safeexec.harness import Message, RecordingModel, RunOptions, TurnKey, load_suite, run_task
from safeexec.harness.models import ModelError
from safeexec.harness.openai_client import OpenAIModel

KEY = "sk-stubtest-0123456789abcdefSECRET"
TURN = TurnKey(task="t", format="json", turn=0)
FIXTURE = Path(__file__).resolve().parents[2] / "harness" / "fixture_suite"


class Stub:
    """Answers POST /v1/chat/completions from a queue of (status, body, headers, hold) items."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, object, dict[str, str]]] = []
        self.requests: list[dict[str, object]] = []
        self.auth: list[str] = []
        self.release = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                stub.requests.append(json.loads(self.rfile.read(length)))
                stub.auth.append(self.headers.get("authorization", ""))
                status, body, headers = stub.queue.pop(0)
                if body == "hang":
                    stub.release.wait(10)
                    return
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    yield server
    server.close()


def completion(
    content: str = "", calls: list[dict[str, object]] | None = None
) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "choices": [{"index": 0, "message": message}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7},
    }


def model(stub: Stub, **options: object) -> tuple[OpenAIModel, list[float]]:
    slept: list[float] = []
    client = OpenAIModel(
        "stub-model",
        base_url=stub.url,
        api_key=KEY,
        sleep=slept.append,
        **options,  # type: ignore[arg-type]
    )
    return client, slept


def test_tool_calls_and_usage_are_parsed(stub: Stub) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    stub.queue.append((200, completion(calls=[call]), {}))
    client, _ = model(stub)
    tools = [{"name": "add", "description": "", "parameters": {"type": "object"}}]
    reply = client.complete([Message(role="user", content="hi")], tools=tools, key=TURN)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("c1", "add", '{"a": 1}')]
    assert reply.usage is not None and reply.usage.prompt_tokens == 11
    sent = stub.requests[0]
    assert sent["model"] == "stub-model"
    assert sent["tools"] == [{"type": "function", "function": tools[0]}]
    assert stub.auth == [f"Bearer {KEY}"]


def test_rate_limits_and_server_errors_are_retried_with_backoff(stub: Stub) -> None:
    stub.queue += [
        (429, {"error": "slow down"}, {"retry-after": "7"}),
        (503, {"error": "busy"}, {}),
        (502, {"error": "bad gateway"}, {}),
        (200, completion("done"), {}),
    ]
    client, slept = model(stub, backoff_seconds=0.5)
    reply = client.complete([Message(role="user", content="hi")], key=TURN)
    assert reply.text == "done"
    assert slept == [7.0, 1.0, 2.0]  # Retry-After honoured, then 0.5 * 2**attempt
    assert client.retries == 3


def test_retries_run_out_into_a_model_error(stub: Stub) -> None:
    stub.queue += [(500, {"error": "x"}, {})] * 3
    client, slept = model(stub, max_retries=2)
    with pytest.raises(ModelError, match="giving up after 3 attempt"):
        client.complete([Message(role="user", content="hi")], key=TURN)
    assert len(slept) == 2


def test_a_client_error_is_not_retried(stub: Stub) -> None:
    stub.queue.append((400, {"error": "bad request"}, {}))
    client, slept = model(stub)
    with pytest.raises(ModelError, match="HTTP 400"):
        client.complete([Message(role="user", content="hi")], key=TURN)
    assert slept == []


def test_a_timeout_is_retried_then_succeeds(stub: Stub) -> None:
    stub.queue += [(200, "hang", {}), (200, completion("late but fine"), {})]
    client, slept = model(stub, timeout_seconds=0.3)
    reply = client.complete([Message(role="user", content="hi")], key=TURN)
    assert reply.text == "late but fine" and len(slept) == 1


def test_a_stream_is_joined_into_one_reply(stub: Stub) -> None:
    chunks = [
        {"choices": [{"delta": {"content": "Hel"}}]},
        {"choices": [{"delta": {"content": "lo"}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c9",
            "function": {"name": "ad", "arguments": '{"a"'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0,
            "function": {"name": "d", "arguments": ': 2}'}}]}}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    ]  # fmt: skip
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    stub.queue.append((200, body.encode(), {"content-type": "text/event-stream"}))
    client, _ = model(stub, stream=True)
    reply = client.complete([Message(role="user", content="hi")], key=TURN)
    assert reply.text == "Hello"
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("c9", "add", '{"a": 2}')]
    assert reply.usage is not None and reply.usage.completion_tokens == 3
    assert stub.requests[0]["stream"] is True


def test_no_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from safeexec.errors import ConfigurationError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1")


def test_the_key_appears_in_no_file_a_run_writes(stub: Stub, tmp_path: Path) -> None:
    suite = load_suite(FIXTURE)
    task = suite.tasks[0]  # calc-sum: add, then submit
    add = {
        "id": "c1",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 2.5, "b": 4}'},
    }
    submit = {
        "id": "c2",
        "type": "function",
        "function": {"name": "submit", "arguments": '{"value": 6.5}'},
    }
    stub.queue += [
        (429, {"error": "later"}, {}),
        (200, completion(calls=[add]), {}),
        (500, {"error": f"upstream saw {KEY[:6]}"}, {}),
        (200, completion(calls=[submit]), {}),
    ]  # fmt: skip
    client, _ = model(stub)
    recorded = RecordingModel(client, tmp_path / "recordings" / "run.jsonl")
    options = RunOptions(format="json", mode="restricted", state_dir=tmp_path)
    result = run_task(suite, task, recorded, options)
    assert result.success and result.tokens == {"prompt": 22, "completion": 14}
    assert "Bearer" not in repr(client) and KEY not in repr(client)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 5 and (tmp_path / "recordings" / "run.jsonl") in written
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
