"""The dsl mode through the whole pipeline: Session, approval on the plan, the audit event, the
policy schema and packs, fences, and the CLI faces (run --mode dsl, dsl plan/check, explain)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dsl_support import EXAMPLES, example_specs
from typer.testing import CliRunner

from safeexec.cli.app import app
from safeexec.dsl.plan import plan_of
from safeexec.dsl.rules import DSL_RULES
from safeexec.extract import combine, extract
from safeexec.model.values import Action, Decision, Verdict
from safeexec.policy.loader import load_policy
from safeexec.policy.schema import CapabilityConfig, Policy
from safeexec.session.session import Session

TOOLS = EXAMPLES / "tools.py"


def example_policy(*, approval: frozenset[str] = frozenset({"book"})) -> Policy:
    base = load_policy("default")
    limits = {"reserve": 3, "book": 2, "transfer": 1}
    caps = tuple(
        CapabilityConfig(
            tool=spec.name, max_calls=limits.get(spec.name), requires_approval=spec.name in approval
        )
        for spec in example_specs()
    )
    return dataclasses.replace(base, capabilities=caps)


@pytest.fixture
def seen() -> list[Decision]:
    return []


@pytest.fixture
def session(tmp_path: Path, seen: list[Decision]) -> Iterator[Session]:
    def approver(decision: Decision, action: Action) -> bool:
        seen.append(decision)
        return True

    with Session(
        policy=example_policy(), mode="dsl", state_dir=tmp_path, approver=approver,
        tool_approver=lambda request: True,
    ) as s:  # fmt: skip
        for spec in example_specs():
            s.grant(spec)
        yield s


def test_a_python_program_is_refused_before_anything_runs(session: Session) -> None:
    outcome = session.run("```python\nimport os\nprint(os.environ)\n```")
    assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
    (finding,) = outcome.decision.findings
    assert finding.rule == "SX700" and "`import`" in finding.message
    assert session.statistics().tool_calls == 0


def test_a_dsl_fence_runs_and_the_plan_is_stored_with_the_audit_event(session: Session) -> None:
    source = (EXAMPLES / "shopping.dsl").read_text()
    outcome = session.run(f"Here:\n```dsl\n{source}```\n")
    assert outcome.decision.verdict is Verdict.ALLOW and outcome.result is not None
    assert outcome.action.language == "dsl"
    assert "RES-C-100-1" in outcome.observation.text
    (plan,) = [f for f in outcome.event.findings if f.rule == "SX790"]
    logged = [json.loads(line) for line in session.audit.path.read_text().splitlines()]
    stored = [f for f in logged[-1]["findings"] if f["rule"] == "SX790"]
    assert json.loads(stored[0]["evidence"]) == json.loads(plan.evidence)
    assert [t["name"] for t in json.loads(plan.evidence)["tools"]] == ["search_products", "reserve"]


def test_the_approver_receives_the_plan_before_any_tool_runs(
    session: Session, seen: list[Decision]
) -> None:
    source = (EXAMPLES / "travel_book.dsl").read_text()
    outcome = session.run(source)
    (decision,) = seen
    assert decision.verdict is Verdict.NEEDS_APPROVAL
    (card,) = [f for f in decision.findings if f.rule == "SX710"]
    plan = json.loads(card.evidence)
    assert plan_of(decision.findings) == plan
    book = next(t for t in plan["tools"] if t["name"] == "book")
    assert book["max_calls"] == 2 and book["effects"] == ["money"]
    assert {"kind": "hotel", "nights": 4} in [c["arguments"] for c in book["calls"]]
    assert outcome.result is not None and outcome.result.status.value == "ok"


def test_a_refused_approval_runs_nothing(tmp_path: Path) -> None:
    with Session(
        policy=example_policy(), mode="dsl", state_dir=tmp_path, approver=lambda d, a: False
    ) as s:
        for spec in example_specs():
            s.grant(spec)
        outcome = s.run((EXAMPLES / "travel_book.dsl").read_text())
        assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
        assert s.statistics().tool_calls == 0


def test_a_program_over_max_calls_is_refused_up_front(session: Session) -> None:
    outcome = session.run('for p in search_products(query="c"):\n    reserve(sku=p.sku)\nreturn 1')
    assert outcome.decision.verdict is Verdict.DENY and outcome.result is None
    # 1000 possible reservations: over the grant (SX704) and over the session budget (SX705).
    assert [f.rule for f in outcome.decision.findings] == ["SX704", "SX705", "SX790"]
    assert session.statistics().tool_calls == 0


def test_the_policy_schema_and_packs_know_the_dsl_mode() -> None:
    assert "dsl" in load_policy("default").backends.allowed
    assert "dsl" in load_policy("strict").backends.allowed


def test_dsl_fences_extract_as_dsl_actions() -> None:
    actions = extract("```dsl\nreturn 1\n```\n```dsl\nreturn 2\n```")
    assert [a.language for a in actions] == ["dsl", "dsl"]
    joined = combine(actions)
    assert joined is not None and joined.language == "dsl" and "return 2" in joined.code
    mixed = combine(extract("```python\nprint(1)\n```\n```dsl\nreturn 1\n```"))
    assert mixed is not None and mixed.language == "python"


runner = CliRunner()


def test_cli_dsl_plan_prints_text_and_json() -> None:
    text = runner.invoke(
        app, ["dsl", "plan", "--tools", str(TOOLS), str(EXAMPLES / "shopping.dsl")]
    )
    assert text.exit_code == 0, text.output
    assert "reserve: ≤ 1 call, effect money" in text.output
    as_json = runner.invoke(
        app, ["dsl", "plan", "--json", "--tools", str(TOOLS), str(EXAMPLES / "shopping.dsl")]
    )
    assert as_json.exit_code == 0
    assert json.loads(as_json.output)["effects"] == ["money"]


def test_cli_dsl_check_reports_findings_with_carets(tmp_path: Path) -> None:
    bad = tmp_path / "bad.dsl"
    bad.write_text('x = search_product(query="a")\nreturn x\n')
    result = runner.invoke(app, ["dsl", "check", "--tools", str(TOOLS), str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:1:5: SX701 unknown tool or op `search_product`; did you mean" in result.output
    assert "  |     ^" in result.output
    good = runner.invoke(
        app, ["dsl", "check", "--tools", str(TOOLS), str(EXAMPLES / "shopping.dsl")]
    )
    assert good.exit_code == 0 and good.output.endswith(": allow\n")


@pytest.mark.parametrize("rule", [r.id for r in DSL_RULES])
def test_every_dsl_rule_is_explained(rule: str) -> None:
    result = runner.invoke(app, ["explain", rule])
    assert result.exit_code == 0 and f"# {rule}" in result.output
    assert "## What it does" in result.output


def test_cli_run_mode_dsl_refuses_python(tmp_path: Path) -> None:
    reply = tmp_path / "reply.md"
    reply.write_text("```python\nimport os\nos.system('id')\n```\n")
    result = runner.invoke(
        app, ["run", "--mode", "dsl", "--state-dir", str(tmp_path / "state"), str(reply)]
    )
    assert result.exit_code != 0
    assert "SX700" in result.output


def test_the_session_makes_the_dsl_backend_by_name() -> None:
    from safeexec.backends.dsl import DslBackend
    from safeexec.backends.registry import default_backend
    from safeexec.errors import BackendUnavailable

    assert isinstance(default_backend("dsl"), DslBackend)
    with pytest.raises(BackendUnavailable, match="'dsl'"):
        default_backend("docker")
