"""The OpenAI-compatible model (the official SDK) against a stub chat-completions server on
127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from safeexec.harness import Message, RecordingModel, RunOptions, TurnKey, load_suite, run_task
from safeexec.harness.models import ModelError, request_sha256
from safeexec.harness.openai_model import OpenAIModel

KEY = "sk-stubtest-0123456789abcdefSECRET"
TURN = TurnKey(task="t", format="json", turn=0)
FIXTURE = Path(__file__).resolve().parents[2] / "harness" / "fixture_suite"


class Stub:
    """Answers POST /v1/chat/completions from a queue of (status, body, headers) items."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, object, dict[str, str]]] = []
        self.requests: list[dict[str, object]] = []
        self.auth: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                stub.requests.append(json.loads(self.rfile.read(length)))
                stub.auth.append(self.headers.get("authorization", ""))
                status, body, headers = stub.queue.pop(0)
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


def model(stub: Stub, **options: object) -> OpenAIModel:
    return OpenAIModel("stub-model", base_url=stub.url, api_key=KEY, **options)  # type: ignore[arg-type]


def test_tool_calls_and_usage_are_parsed(stub: Stub) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    stub.queue.append((200, completion(calls=[call]), {}))
    client = model(stub)
    tools = [{"name": "add", "description": "", "parameters": {"type": "object"}}]
    reply = client.complete(
        [Message(role="user", content="hi")], tools=tools, key=TURN, max_tokens=64
    )
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("c1", "add", '{"a": 1}')]
    assert reply.usage is not None and reply.usage.prompt_tokens == 11
    assert stub.auth == [f"Bearer {KEY}"]


def test_the_request_sent_is_the_one_whose_hash_is_recorded(stub: Stub, tmp_path: Path) -> None:
    stub.queue.append((200, completion("hello"), {}))
    client = model(stub, temperature=0.0, seed=7)
    recorded = RecordingModel(client, tmp_path / "r.jsonl")
    tools = [{"name": "add", "description": "adds", "parameters": {"type": "object"}}]
    messages = [Message(role="system", content="s"), Message(role="user", content="hi")]
    recorded.complete(messages, tools=tools, key=TURN, max_tokens=32)
    (sent,) = stub.requests
    assert sent["max_tokens"] == 32 and sent["seed"] == 7 and sent["model"] == "stub-model"
    assert sent["tools"] == [{"type": "function", "function": tools[0]}]
    assert sent["tool_choice"] == "auto"
    (line,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert line["request_sha256"] == request_sha256(sent)
    assert line["params"] == {"model": "stub-model", "temperature": 0.0, "seed": 7}


def test_a_server_error_is_retried_by_the_sdk_then_succeeds(stub: Stub) -> None:
    stub.queue += [
        (503, {"error": "busy"}, {"retry-after-ms": "1"}),
        (200, completion("done"), {}),
    ]
    reply = model(stub).complete([Message(role="user", content="hi")], key=TURN)
    assert reply.text == "done" and len(stub.requests) == 2


def test_retries_run_out_into_a_model_error(stub: Stub) -> None:
    stub.queue += [(500, {"error": "x"}, {"retry-after-ms": "1"})] * 3
    client = model(stub, max_retries=2)
    with pytest.raises(ModelError, match="HTTP 500"):
        client.complete([Message(role="user", content="hi")], key=TURN)
    assert len(stub.requests) == 3


def test_a_client_error_is_not_retried(stub: Stub) -> None:
    stub.queue.append((400, {"error": "bad request"}, {}))
    with pytest.raises(ModelError, match="HTTP 400"):
        model(stub).complete([Message(role="user", content="hi")], key=TURN)
    assert len(stub.requests) == 1


def test_an_unreachable_endpoint_is_a_model_error() -> None:
    client = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0)
    with pytest.raises(ModelError, match="no answer"):
        client.complete([Message(role="user", content="hi")], key=TURN)


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
        (429, {"error": "later"}, {"retry-after-ms": "1"}),
        (200, completion(calls=[add]), {}),
        (500, {"error": f"upstream saw {KEY[:6]}"}, {"retry-after-ms": "1"}),
        (200, completion(calls=[submit]), {}),
    ]  # fmt: skip
    client = model(stub)
    recorded = RecordingModel(client, tmp_path / "recordings" / "run.jsonl")
    options = RunOptions(format="json", mode="restricted", state_dir=tmp_path)
    result = run_task(suite, task, recorded, options)
    assert result.success and result.tokens == {"prompt": 22, "completion": 14}
    assert "Bearer" not in repr(client) and KEY not in repr(client)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 5 and (tmp_path / "recordings" / "run.jsonl") in written
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path
