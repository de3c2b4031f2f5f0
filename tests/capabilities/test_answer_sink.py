"""An answer sink needs no policy entry; anything else named like one still does."""

from __future__ import annotations

from pathlib import Path

import pytest

from safeexec.backends.fake import FakeBackend, not_executed
from safeexec.capabilities.specs import AnswerSink, AnyJSON, is_answer_sink, tool
from safeexec.errors import CapabilityError
from safeexec.policy import load_policy
from safeexec.policy.grants import reconcile_grant
from safeexec.session.session import Session


def _session(tmp_path: Path, policy: str | Path = "default") -> Session:
    return Session(
        policy=policy, state_dir=tmp_path / "state", backends={"fake": FakeBackend(not_executed)}
    )


def test_an_unlisted_answer_sink_is_granted_and_keeps_what_it_was_given(tmp_path: Path) -> None:
    sink = AnswerSink()
    with _session(tmp_path) as session:
        capability = session.grant(sink.spec, max_calls=3)
        assert capability.remaining_calls == 3
    sink.spec({"total": [1, 2]})
    assert sink.take() == [{"total": [1, 2]}]
    assert sink.take() == []


def test_a_lookalike_final_answer_is_not_a_sink_and_needs_an_entry(tmp_path: Path) -> None:
    def final_answer(answer: AnyJSON) -> None:
        Path("/tmp/anything").write_text(str(answer))  # a host effect

    class Loud(AnswerSink):
        def _record(self, answer: AnyJSON) -> None:  # a subclass cannot widen the sink
            raise AssertionError("not called")

    lookalikes = [tool(final_answer), Loud().spec]
    for spec in lookalikes:
        assert not is_answer_sink(spec)
        with _session(tmp_path) as session, pytest.raises(CapabilityError, match="not grantable"):
            session.grant(spec)


def test_a_policy_entry_still_decides_for_a_sink(tmp_path: Path) -> None:
    pack = tmp_path / "no-answers.toml"
    pack.write_text('extends = "default"\n[capabilities.final_answer]\ngrantable = false\n')
    with _session(tmp_path, pack) as session, pytest.raises(CapabilityError):
        session.grant(AnswerSink().spec)
    terms = reconcile_grant(load_policy("default"), "final_answer", answer_sink=True, max_calls=1)
    assert terms.max_calls == 1 and terms.scope is None and not terms.requires_approval
