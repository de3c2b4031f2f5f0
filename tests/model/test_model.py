"""Value types: strict decoding, error tree, pinned exports (round trips: tests/properties)."""

from __future__ import annotations

import dataclasses

import pytest

from safeexec import errors
from safeexec.model import codec
from safeexec.model import values as model
from safeexec.model.values import (
    Action,
    ActionSource,
    AuditEvent,
    BlobRef,
    Bound,
    Budget,
    Decision,
    Enforcement,
    ExecResult,
    ExecStatus,
    Finding,
    GuardDenied,
    Limits,
    Severity,
    Span,
    Verdict,
)

_VALUE_TYPES = [
    getattr(model, name) for name in model.__all__ if dataclasses.is_dataclass(getattr(model, name))
]


def test_every_exported_dataclass_is_frozen_slotted_and_keyword_only() -> None:
    assert len(_VALUE_TYPES) >= 20  # the loop below must see the model's value types
    for cls in _VALUE_TYPES:
        params = cls.__dataclass_params__
        assert params.frozen, cls
        assert hasattr(cls, "__slots__"), cls
        assert all(f.kw_only for f in dataclasses.fields(cls)), cls


def test_execution_events_carry_their_kind_tag_and_decode_by_it() -> None:
    event = GuardDenied(guard="getattr", detail="_private")
    result = ExecResult(
        status=ExecStatus.DENIED_AT_RUNTIME,
        exit_code=None,
        stdout=BlobRef(sha256="0" * 64, size=0),
        stderr=BlobRef(sha256="0" * 64, size=0),
        events=(event,),
    )
    encoded = result.to_json()
    assert isinstance(encoded, dict)
    assert encoded["events"] == [{"kind": "guard_denied", "guard": "getattr", "detail": "_private"}]
    assert ExecResult.from_json(encoded).events == (event,)


def test_unknown_event_kind_is_rejected() -> None:
    data = {"kind": "tool_teleported", "guard": "x", "detail": "y"}
    with pytest.raises(ValueError, match="unknown kind 'tool_teleported'"):
        codec.from_json(model.ExecutionEvent, data)  # type: ignore[arg-type]


def test_decoding_rejects_unknown_fields_naming_the_path() -> None:
    data = Limits().to_json()
    assert isinstance(data, dict)
    data["cpu_secs"] = 1
    with pytest.raises(ValueError, match=r"\$: unknown field\(s\) \['cpu_secs'\] for Limits"):
        Limits.from_json(data)


def test_decoding_rejects_missing_required_fields() -> None:
    with pytest.raises(ValueError, match="missing field 'size' for BlobRef"):
        BlobRef.from_json({"sha256": "ab"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"steps_left": True, "cpu_seconds_left": 1.0, "tool_calls_left": 1}, "steps_left"),
        ({"steps_left": 1, "cpu_seconds_left": "1", "tool_calls_left": 1}, "cpu_seconds_left"),
        ({"steps_left": 1.5, "cpu_seconds_left": 1.0, "tool_calls_left": 1}, "steps_left"),
        ([1, 2, 3], "expected an object for Budget"),
    ],
)
def test_decoding_rejects_values_of_the_wrong_type(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Budget.from_json(data)


def test_decoding_rejects_an_enum_value_outside_the_enum() -> None:
    data = Decision(verdict=Verdict.ALLOW).to_json()
    assert isinstance(data, dict)
    data["verdict"] = "maybe"
    with pytest.raises(ValueError, match=r"\$\.verdict: 'maybe' is not one of"):
        Decision.from_json(data)


def test_decoding_a_nested_error_names_the_nested_path() -> None:
    finding = Finding(
        rule="SX001",
        name="syntax-error",
        message="m",
        severity=Severity.HIGH,
        enforcement=Enforcement.DENY,
        span=Span(start_line=1, start_column=1, end_line=1, end_column=2),
    )
    data = Decision(verdict=Verdict.DENY, findings=(finding,)).to_json()
    assert isinstance(data, dict)
    data["findings"][0]["span"]["end_line"] = "two"  # type: ignore[index,call-overload]
    with pytest.raises(ValueError, match=r"\$\.findings\[0\]\.span\.end_line"):
        Decision.from_json(data)


def test_action_create_hashes_the_exact_code_and_draws_distinct_ids() -> None:
    first = Action.create("print(1)\n", source=ActionSource.FENCED)
    second = Action.create("print(1)\n")
    assert first.code_sha256 == model.sha256_hex(b"print(1)\n")
    assert first.action_id != second.action_id
    assert first.action_id.startswith("a-")
    assert Action.create("x", action_id="fixed").action_id == "fixed"


def test_sha256_hex_of_a_lone_surrogate_does_not_raise() -> None:
    assert len(model.sha256_hex("\ud800")) == 64


def test_budget_charge_and_exhaustion_name_the_dimension() -> None:
    budget = Budget(steps_left=2, cpu_seconds_left=1.0, tool_calls_left=0)
    assert budget.exhausted == ()
    after = budget.charge(steps=1, cpu_seconds=1.5, tool_calls=1)
    assert after == Budget(steps_left=1, cpu_seconds_left=0.0, tool_calls_left=-1)
    assert after.exhausted == ("cpu_seconds", "tool_calls")
    assert after.charge().exhausted == ("steps", "cpu_seconds", "tool_calls")


def test_raise_for_verdict_raises_denied_carrying_the_decision() -> None:
    Decision(verdict=Verdict.ALLOW).raise_for_verdict()
    finding = Finding(
        rule="SX201", name="n", message="m", severity=Severity.HIGH, enforcement=Enforcement.DENY
    )
    for verdict in (Verdict.DENY, Verdict.NEEDS_APPROVAL):
        decision = Decision(verdict=verdict, findings=(finding,))
        with pytest.raises(errors.Denied, match="SX201") as caught:
            decision.raise_for_verdict()
        assert caught.value.decision is decision


def test_bound_constructors_set_the_kind() -> None:
    assert Bound.known(3.0).value == 3.0
    assert Bound.unknown("dynamic").kind == "unknown"
    assert Bound.unbounded("while True").reason == "while True"


def test_blob_ref_uri_is_the_blob_scheme() -> None:
    assert BlobRef(sha256="ab" * 32, size=1).uri == "blob://sha256:" + "ab" * 32


def test_audit_event_has_the_seed_schema_fields() -> None:
    names = {f.name for f in dataclasses.fields(AuditEvent)}
    seed = {
        "action_id", "language", "code_sha256", "sandbox_image", "sandbox_version", "verdict",
        "exit_code", "stdout_ref", "stderr_ref", "duration_ms", "side_effects", "policy_digest",
        "findings", "limits", "usage", "masked_fields", "session_id", "timestamp",
    }  # fmt: skip
    assert seed <= names


def test_error_tree_matches_the_documented_shape() -> None:
    parents = {
        errors.PolicyError: errors.SafeExecError,
        errors.ConfigurationError: errors.SafeExecError,
        errors.BackendError: errors.SafeExecError,
        errors.BackendUnavailable: errors.BackendError,
        errors.CapabilityError: errors.SafeExecError,
        errors.AuditError: errors.SafeExecError,
        errors.Denied: errors.SafeExecError,
        errors.InternalError: errors.SafeExecError,
    }
    for cls, parent in parents.items():
        assert cls.__bases__ == (parent,), cls
        assert cls.__name__ in (errors.__doc__ or "")
    assert errors.SafeExecError.__bases__ == (Exception,)


def test_policy_error_says_where_and_how_to_fix() -> None:
    error = errors.PolicyError(
        "unknown key 'limitz'",
        file="p.toml",
        line=3,
        pointer="/limitz",
        hint="did you mean 'limits'?",
    )
    assert str(error) == "p.toml:3: unknown key 'limitz' (at /limitz); did you mean 'limits'?"
    assert str(errors.PolicyError("bad")) == "bad"


def test_span_at_makes_the_same_span_as_its_constructor() -> None:
    made = model.span_at(2, 5, 3, 1)
    built = Span(start_line=2, start_column=5, end_line=3, end_column=1)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert type(made) is Span and made.to_json() == built.to_json()
    assert model.span_at(2, 5, 3, 2) != built
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.start_line = 1  # type: ignore[misc]


def test_public_exports_are_pinned() -> None:
    assert model.__all__ == [
        "Action", "ActionSource", "Artifact", "AuditEvent", "BlobRef", "Bound", "BoundKind",
        "Budget", "Decision", "DisplayData", "DisplayKind", "Enforcement", "Estimate", "ExecError",
        "ExecRequest", "ExecResult", "ExecStatus", "ExecutionEvent", "Finding", "GuardDenied",
        "LimitHit", "Limits", "MimeItem", "NetworkConnection", "NetworkVerdict", "Observation",
        "Outcome", "OutputChunk", "OutputCut",
        "Severity", "Span", "StreamName", "SyscallKilled", "ToolCalled", "ToolRefused", "Usage",
        "Verdict", "span_at",
    ]  # fmt: skip
    assert errors.__all__ == [
        "AuditError", "BackendError", "BackendUnavailable", "CapabilityError",
        "ConfigurationError", "Denied", "InProcessRefused", "InternalError", "PolicyError",
        "SafeExecError", "ToolError",
    ]  # fmt: skip
    assert codec.__all__ == ["JSONValue", "field_names", "from_json", "to_json"]
    for module in (model, errors, codec):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
