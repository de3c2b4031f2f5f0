"""The demo (``make demo``) runs the whole pipeline on the shipped defaults and checks its log."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from safeexec import demo
from safeexec.audit.log import AuditLog
from safeexec.demo import REPLIES, main
from safeexec.model.values import ExecStatus, Verdict
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import Policy


def test_the_demo_runs_every_reply_and_audits_each_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def default_with_a_short_cpu_limit(name: str) -> Policy:
        policy = load_policy(name)
        return dataclasses.replace(policy, limits=dataclasses.replace(policy.limits, cpu_seconds=1))

    # The infinite loop would burn the default 10 CPU seconds; one shows the same thing.
    monkeypatch.setattr(demo, "load_policy", default_with_a_short_cpu_limit)
    assert main(state_dir=tmp_path) == 0
    out = capsys.readouterr().out
    assert "policy 'default', backend 'native'" in out
    assert "note:" not in out  # nothing fell back
    assert "sum of squares: 285" in out
    assert "largest: 81 of 10" in out
    assert "SX001" in out and "^" in out
    events = AuditLog(tmp_path / "audit.jsonl").read()
    assert len(events) == len(REPLIES)
    assert [e.verdict for e in events[:4]] == [
        Verdict.ALLOW,
        Verdict.ALLOW,
        Verdict.DENY,
        Verdict.DENY,
    ]
    assert [f.rule for f in events[2].findings] == ["SX001"]
    assert any(f.rule.startswith("SX2") for f in events[3].findings)  # an import rule
    assert events[3].status is None
    assert events[4].status in {ExecStatus.TIMEOUT, ExecStatus.LIMIT_EXCEEDED}
    assert f"({len(REPLIES)} events)" in out
    assert "every referenced blob exists and is intact" in out
