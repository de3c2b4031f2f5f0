from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Literal

import pytest

from safeexec.capabilities import gateway as capabilities
from safeexec.capabilities.gateway import (
    MAX_TOOL_EVENTS,
    ApprovalRequest,
    Capability,
    CapabilitySet,
    CapabilityStatistics,
    Effect,
    ToolError,
    Url,
    is_forbidden_address,
    tool,
    tool_function,
)
from safeexec.errors import CapabilityError
from safeexec.model.values import LimitHit, ToolCalled, ToolRefused, sha256_hex


def call(args: list[object] | None = None, **kwargs: object) -> dict[str, object]:
    return {"args": args or [], "kwargs": kwargs}


@tool(effects=["money"])
def reserve(product_id: str, quantity: int = 1) -> dict[str, object]:
    """Reserve a product."""
    return {"reserved": product_id, "quantity": quantity}


@tool
def search(query: str, max_price: float | None = None, tags: list[str] | None = None) -> list[str]:
    return [query, str(max_price), ",".join(tags or [])]


def test_public_api_is_pinned() -> None:
    assert sorted(capabilities.__all__) == [
        "ApprovalRequest",
        "BoundPath",
        "Capability",
        "CapabilitySet",
        "CapabilityStatistics",
        "CheckedURL",
        "Effect",
        "MAX_TOOL_EVENTS",
        "ToolDescriptor",
        "ToolError",
        "ToolReply",
        "ToolSpec",
        "Url",
        "canonical_json",
        "is_forbidden_address",
        "to_plain",
        "tool",
        "tool_function",
    ]


def test_tool_derives_schema_description_and_effects() -> None:
    assert reserve.name == "reserve"
    assert reserve.description == "Reserve a product."
    assert reserve.effects == (Effect.MONEY,)
    assert reserve.parameters == {
        "type": "object",
        "properties": {
            "product_id": {"type": "string"},
            "quantity": {"type": "integer", "default": 1},
        },
        "required": ["product_id"],
        "additionalProperties": False,
    }
    props = search.parameters["properties"]
    assert isinstance(props, dict)
    assert props["max_price"] == {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None}
    assert props["tags"]["anyOf"][0] == {"type": "array", "items": {"type": "string"}}  # type: ignore[index]


def test_tool_refuses_open_or_unannotated_signatures() -> None:
    def open_args(*items: str) -> None: ...

    def open_kwargs(**items: str) -> None: ...

    def unannotated(x) -> None:  # type: ignore[no-untyped-def]
        ...

    def odd_type(x: bytes) -> None: ...

    for func in (open_args, open_kwargs, unannotated, odd_type):
        with pytest.raises(CapabilityError):
            tool(func)


def test_tool_with_path_needs_root_and_effects_are_a_closed_set() -> None:
    def read(path: Path) -> str:
        return ""

    with pytest.raises(CapabilityError, match="root"):
        tool(read)
    with pytest.raises(CapabilityError, match="effects"):
        tool(read, effects=["teleport"], root="/tmp")


def test_capability_has_no_public_constructor() -> None:
    with pytest.raises(TypeError, match="no public constructor"):
        Capability(spec=reserve, max_calls=1, scope=None, requires_approval=False, parent=None)


def test_capability_refuses_copy_pickle_and_mutation() -> None:
    cap = CapabilitySet().grant(reserve, max_calls=2)
    with pytest.raises(TypeError):
        pickle.dumps(cap)
    with pytest.raises(TypeError):
        copy.copy(cap)
    with pytest.raises(TypeError):
        copy.deepcopy(cap)
    with pytest.raises(AttributeError):
        cap.max_calls = 100  # type: ignore[misc]
    assert cap.max_calls == 2


def test_successful_call_records_digests_and_effects() -> None:
    caps = CapabilitySet()
    cap = caps.grant(reserve, max_calls=3)
    reply = caps.invoke("reserve", call(["p1"], quantity=2))
    assert reply.ok and reply.value == {"reserved": "p1", "quantity": 2}
    assert isinstance(reply.event, ToolCalled)
    assert reply.event.capability_id == cap.id
    assert reply.event.effects == ("money",)
    assert reply.event.arguments_sha256 == sha256_hex('{"product_id":"p1","quantity":2}')
    assert reply.event.result_sha256 == sha256_hex('{"quantity":2,"reserved":"p1"}')
    assert cap.remaining_calls == 2


def test_calls_past_max_calls_are_refused() -> None:
    caps = CapabilitySet()
    caps.grant(reserve, max_calls=1)
    assert caps.invoke("reserve", call(["a"])).ok
    reply = caps.invoke("reserve", call(["b"]))
    assert not reply.ok and "limit" in reply.error
    assert isinstance(reply.event, ToolRefused)


def test_ungranted_tool_is_refused() -> None:
    reply = CapabilitySet().invoke("reserve", call(["a"]))
    assert not reply.ok and "not granted" in reply.error
    assert isinstance(reply.event, ToolRefused)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (call(["a"], colour="red"), "unknown parameter"),
        (call([], quantity=1), "missing required"),
        (call([1]), "expected a string"),
        (call(["a"], quantity=True), "expected an integer"),
        (call(["a"], quantity=1.0), "expected an integer"),
        (call(["a", 1, 2]), "at most 2 positional"),
        (call(["a"], product_id="b"), "multiple values"),
        ({"product_id": "a"}, "arguments must be"),
        ("reserve everything", "arguments must be"),
    ],
)
def test_arguments_are_validated_strictly(arguments: object, fragment: str) -> None:
    caps = CapabilitySet()
    caps.grant(reserve)
    reply = caps.invoke("reserve", arguments)  # type: ignore[arg-type]
    assert not reply.ok and fragment in reply.error


def test_validated_values_are_fresh_copies() -> None:
    seen: list[object] = []

    @tool
    def keep(items: list[str]) -> int:
        seen.append(items)
        return len(items)

    caps = CapabilitySet()
    caps.grant(keep)
    original = ["a", "b"]
    assert caps.invoke("keep", call([original])).value == 2
    assert seen[0] == original and seen[0] is not original


def test_results_are_json_plain_copies_and_host_objects_never_leak() -> None:
    shared = {"count": [1, 2]}

    @tool
    def state() -> dict[str, list[int]]:
        return shared

    @tool
    def leak() -> object:
        return object()

    caps = CapabilitySet()
    caps.grant(state)
    caps.grant(leak)
    reply = caps.invoke("state", call())
    assert reply.value == shared and reply.value is not shared
    assert reply.value["count"] is not shared["count"]  # type: ignore[index, call-overload]
    bad = caps.invoke("leak", call())
    assert not bad.ok and "cannot cross" in bad.error
    assert isinstance(bad.event, ToolCalled) and not bad.event.ok


def test_tool_exception_comes_back_as_a_message_only() -> None:
    @tool
    def explode(x: int) -> int:
        raise RuntimeError(f"broken with {x}")

    caps = CapabilitySet()
    caps.grant(explode)
    reply = caps.invoke("explode", call([3]))
    assert not reply.ok
    assert reply.error == "tool 'explode' failed: RuntimeError: broken with 3"
    assert "Traceback" not in reply.error


def test_approval_denied_without_callback_and_follows_callback() -> None:
    caps = CapabilitySet()
    caps.grant(reserve, requires_approval=True)
    assert "not approved" in caps.invoke("reserve", call(["a"])).error

    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.arguments == {"product_id": "ok"}

    caps = CapabilitySet(approve=approve)
    caps.grant(reserve, requires_approval=True)
    assert caps.invoke("reserve", call(["ok"])).ok
    assert not caps.invoke("reserve", call(["no"])).ok
    assert [r.arguments for r in asked] == [{"product_id": "ok"}, {"product_id": "no"}]
    assert asked[0].effects == (Effect.MONEY,)


def test_crashing_approver_approves_nothing() -> None:
    def approve(request: ApprovalRequest) -> bool:
        raise RuntimeError("approver down")

    caps = CapabilitySet(approve=approve)
    caps.grant(reserve, requires_approval=True)
    assert not caps.invoke("reserve", call(["a"])).ok


def test_attenuate_only_narrows_and_shares_accounting() -> None:
    caps = CapabilitySet()
    parent = caps.grant(reserve, max_calls=3)
    child = parent.attenuate(max_calls=1)
    with pytest.raises(CapabilityError, match="only narrow"):
        parent.attenuate(max_calls=4)
    other = CapabilitySet()
    other.grant(child)
    assert other.invoke("reserve", call(["a"])).ok
    assert not other.invoke("reserve", call(["b"])).ok
    assert parent.remaining_calls == 2
    assert other.get("reserve") is not child  # grant() installs a further narrowing


def test_scope_restricts_the_scoped_argument() -> None:
    @tool(scope_parameter="product_id")
    def buy(product_id: str) -> str:
        return product_id

    caps = CapabilitySet()
    cap = caps.grant(buy, scope=["p1", "p2"])
    assert caps.invoke("buy", call(["p1"])).ok
    assert "outside the granted scope" in caps.invoke("buy", call(["p3"])).error
    with pytest.raises(CapabilityError, match="only narrow"):
        cap.attenuate(scope=["p1", "p9"])
    assert cap.attenuate(scope=["p2"]).scope == frozenset({"p2"})
    with pytest.raises(CapabilityError, match="no scope parameter"):
        CapabilitySet().grant(reserve, scope=["x"])


def test_paths_resolve_beneath_root_and_scope(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "q1.txt").write_text("q1")
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "reports" / "escape").symlink_to(tmp_path / "secret.txt")

    def read(path: Path) -> str:
        return path.read_text()

    spec = tool(read, root=tmp_path, effects=["read"])
    caps = CapabilitySet()
    caps.grant(spec, scope=["reports"])
    assert caps.invoke("read", call(["reports/q1.txt"])).value == "q1"
    for attempt in (
        "../etc/passwd",
        "/etc/passwd",
        "secret.txt",
        "reports/escape",
        "reports/../secret.txt",
    ):
        reply = caps.invoke("read", call([attempt]))
        assert not reply.ok, attempt


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::1",
        "10.1.2.3",
        "192.168.0.1",
        "169.254.169.254",
        "fe80::1",
        "0.0.0.0",
        "::ffff:127.0.0.1",
        "nonsense",
    ],
)
def test_forbidden_addresses(address: str) -> None:
    assert is_forbidden_address(address)


def test_public_address_is_not_forbidden() -> None:
    assert not is_forbidden_address("93.184.215.14")


def test_network_tool_refuses_loopback_hosts() -> None:
    fetched: list[str] = []

    @tool(effects=["network"])
    def fetch(url: Url) -> str:
        fetched.append(url)
        return "page"

    caps = CapabilitySet()
    caps.grant(fetch)
    for url in (
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://[::1]/",
        "file:///etc/passwd",
        # numeric spellings of loopback that getaddrinfo resolves locally
        "http://2130706433/",
        "http://0x7f000001/",
        "http://127.1/",
        "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://127.0.0.1:99999/",
    ):
        reply = caps.invoke("fetch", call([url]))
        assert not reply.ok, url
    assert fetched == []


def test_literal_parameters_accept_only_listed_values() -> None:
    @tool
    def paint(colour: Literal["red", "blue"]) -> str:
        return colour

    caps = CapabilitySet()
    caps.grant(paint)
    assert caps.invoke("paint", call(["red"])).ok
    assert not caps.invoke("paint", call(["green"])).ok


def test_tool_function_sends_plain_data_and_raises_tool_error() -> None:
    caps = CapabilitySet()
    caps.grant(reserve, max_calls=1)
    (descriptor,) = caps.describe()
    reserve_proxy = tool_function(descriptor, caps.invoke)
    assert reserve_proxy("p1", quantity=2) == {"reserved": "p1", "quantity": 2}
    with pytest.raises(ToolError, match="limit"):
        reserve_proxy("p2")
    with pytest.raises(TypeError, match="cannot cross"):
        reserve_proxy(object())
    assert reserve_proxy.__name__ == "reserve"


def test_statistics_count_calls_and_refusals() -> None:
    caps = CapabilitySet()
    caps.grant(reserve, max_calls=1)
    caps.invoke("reserve", call(["a"]))
    caps.invoke("reserve", call(["a"]))
    caps.invoke("nope", call())
    stats = caps.statistics()
    assert stats == CapabilityStatistics(calls=1, refusals=2, granted=1)
    caps.invoke("reserve", call(["a"]))
    assert stats.refusals == 2 and caps.statistics().refusals == 3  # a snapshot, not a view
    with pytest.raises(AttributeError):  # frozen, like every statistics() value
        stats.calls = 5  # type: ignore[misc]


# -- the session's tool budget, charged per call ---------------------------------------------------


def _counter() -> tuple[CapabilitySet, list[int]]:
    ran: list[int] = []

    @tool(effects=["money"])
    def pay(amount: int) -> int:
        ran.append(amount)
        return amount

    caps = CapabilitySet()
    caps.grant(pay)  # no max_calls: only the budget limits it
    return caps, ran


def test_a_spent_tool_budget_refuses_calls_within_the_step() -> None:
    caps, ran = _counter()
    caps.begin_step(tool_calls_left=5)
    replies = [caps.invoke("pay", call([i])) for i in range(50)]
    assert ran == [0, 1, 2, 3, 4]
    assert [r.ok for r in replies].count(True) == 5
    refused = [r.event for r in replies if not r.ok]
    assert all(isinstance(e, ToolRefused) and "budget is spent" in e.reason for e in refused)
    caps.begin_step(tool_calls_left=1)  # the session's next step: what its budget says
    assert caps.invoke("pay", call([9])).ok and not caps.invoke("pay", call([10])).ok


def test_a_budget_shared_by_two_tools_counts_both() -> None:
    caps, ran = _counter()

    @tool(effects=["money"])
    def refund(amount: int) -> int:
        ran.append(-amount)
        return amount

    caps.grant(refund)
    caps.begin_step(tool_calls_left=3)
    for i in range(10):
        caps.invoke("pay", call([i]))
        caps.invoke("refund", call([i]))
    assert len(ran) == 3


def test_a_spent_budget_asks_no_approver() -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return True

    caps = CapabilitySet(approve=approve)
    caps.grant(reserve, requires_approval=True)
    caps.begin_step(tool_calls_left=2)
    for _ in range(100):
        caps.invoke("reserve", call(["p"]))
    assert len(asked) == 2


def test_a_call_refused_by_max_calls_does_not_spend_the_budget() -> None:
    caps, ran = _counter()
    caps.grant(reserve, max_calls=1)
    caps.begin_step(tool_calls_left=2)
    for _ in range(5):
        caps.invoke("reserve", call(["p"]))
    assert caps.invoke("pay", call([1])).ok and ran == [1]


def test_tool_events_per_step_are_capped_with_one_summary() -> None:
    caps, ran = _counter()
    caps.begin_step(tool_calls_left=None)
    events = [caps.invoke("pay", call([i])).event for i in range(MAX_TOOL_EVENTS + 500)]
    assert len(ran) == MAX_TOOL_EVENTS + 500  # every call still ran (no budget)
    assert all(isinstance(e, ToolCalled) for e in events[:MAX_TOOL_EVENTS])
    assert events[MAX_TOOL_EVENTS] == LimitHit(limit="tool_events", value=MAX_TOOL_EVENTS)
    assert events[MAX_TOOL_EVENTS + 1 :] == [None] * 499
    caps.begin_step()
    assert isinstance(caps.invoke("pay", call([0])).event, ToolCalled)  # a new step records


def test_failing_and_refused_calls_share_the_event_cap() -> None:
    @tool(effects=["read"])
    def broken() -> int:
        raise RuntimeError("boom")

    caps = CapabilitySet()
    caps.grant(broken)
    events = [caps.invoke("broken", call()).event for _ in range(400)]
    events += [caps.invoke("nope", call()).event for _ in range(400)]
    assert sum(e is not None for e in events) == MAX_TOOL_EVENTS + 1


def test_a_refusal_echoing_a_huge_argument_stays_small() -> None:
    @tool(effects=["read"])
    def pick(choice: Literal["a", "b"]) -> str:
        return choice

    caps = CapabilitySet()
    caps.grant(pick)
    reply = caps.invoke("pick", call(["x" * 10_000_000]))
    assert not reply.ok and isinstance(reply.event, ToolRefused)
    assert len(reply.error) <= 500 and len(reply.event.reason) <= 500


def test_begin_step_takes_an_integer_budget() -> None:
    with pytest.raises(CapabilityError, match="tool_calls_left"):
        CapabilitySet().begin_step(tool_calls_left=1.5)  # type: ignore[arg-type]
