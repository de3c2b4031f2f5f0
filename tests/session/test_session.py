"""Session: the glue runs every step in order, audits every outcome and survives backend bugs."""

from __future__ import annotations

import asyncio
import dataclasses
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from safeexec import gate as gate_module
from safeexec.audit.log import AuditLog
from safeexec.backends.base import SessionSpec
from safeexec.backends.fake import FakeBackend, FakeReply, FakeSession, not_executed
from safeexec.backends.registry import SharedBackends, default_backend
from safeexec.errors import BackendUnavailable, ConfigurationError, InternalError
from safeexec.model.values import (
    Action,
    Decision,
    Enforcement,
    ExecRequest,
    ExecStatus,
    Finding,
    Limits,
    Severity,
    Usage,
    Verdict,
)
from safeexec.parse import Parsed
from safeexec.policy.schema import (
    BackendsConfig,
    BudgetConfig,
    ImportsConfig,
    Policy,
    PolicyInfo,
    SandboxConfig,
)
from safeexec.session import session as session_module
from safeexec.session.session import Session

POLICY = Policy(
    info=PolicyInfo(id="unit"),
    backends=BackendsConfig(allowed=("fake", "other"), default="fake"),
    limits=Limits(cpu_seconds=2.0, wall_seconds=4.0),
    budget=BudgetConfig(steps=10, cpu_seconds=10.0, tool_calls=5),
    digest="9" * 64,
)


@pytest.fixture(autouse=True)
def _empty_gate_cache() -> None:
    # Tests here replace the gate's steps (scan, estimate): a cached decision would bypass them.
    gate_module._CHECKED.clear()


def reply(code: str) -> str:
    return f"Let me compute that.\n\n```python\n{code}```\n"


class TickingClock:
    """Each call returns a moment one second after the previous one."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


class Printer:
    """A handler that answers with a fixed reply and remembers requests."""

    def __init__(self, reply: FakeReply | None = None) -> None:
        self.reply = reply or FakeReply(stdout="ok\n", usage=Usage(cpu_seconds=0.5))
        self.requests: list[ExecRequest] = []

    def __call__(self, request: ExecRequest) -> FakeReply:
        self.requests.append(request)
        return self.reply


@pytest.fixture
def handler() -> Printer:
    return Printer()


@pytest.fixture
def fake(handler: Printer) -> FakeBackend:
    return FakeBackend(handler)


@pytest.fixture
def session(tmp_path: Path, fake: FakeBackend) -> Iterator[Session]:
    with Session(
        policy=POLICY,
        state_dir=tmp_path / "state",
        backends={"fake": fake},
        clock=TickingClock(),
        session_id="s-test",
    ) as opened:
        yield opened


def _approve_everything(
    parsed: Parsed, policy: Policy, *, estimate: object = None, mode: object = None
) -> tuple[Finding, ...]:
    return (
        Finding(
            rule="TEAM001",
            name="needs-a-human",
            message="a human must approve this",
            severity=Severity.MEDIUM,
            enforcement=Enforcement.APPROVE,
        ),
    )


def test_a_fenced_reply_runs_on_the_backend_and_is_audited(
    session: Session, fake: FakeBackend, tmp_path: Path
) -> None:
    outcome = session.run(reply("x = 6 * 7\nprint(x)\n"))
    assert outcome.decision.verdict is Verdict.ALLOW
    assert outcome.decision.backend == "fake"
    assert (outcome.decision.policy_id, outcome.decision.policy_digest) == ("unit", "9" * 64)
    (request,) = fake.calls
    assert request.code == outcome.action.code == "x = 6 * 7\nprint(x)\n"
    assert request.action_id == outcome.action.action_id
    assert request.limits == Limits(cpu_seconds=2.0, wall_seconds=4.0)
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK
    assert "ok" in outcome.observation.text
    (event,) = AuditLog(tmp_path / "state" / "audit.jsonl").read()
    assert event == outcome.event
    assert event.session_id == "s-test"
    assert event.code_sha256 == outcome.action.code_sha256
    assert event.stdout_ref is not None and event.stdout_ref in session.blobs
    assert session.blobs.get(event.stdout_ref) == b"ok\n"


def test_event_time_and_duration_come_from_the_injected_clock(session: Session) -> None:
    event = session.run(reply("pass\n")).event
    assert event.timestamp == "2026-01-02T12:00:01.000000Z"
    assert event.duration_ms == 1000.0


def test_a_naive_clock_is_a_configuration_error(tmp_path: Path, fake: FakeBackend) -> None:
    with (
        Session(
            policy=POLICY,
            state_dir=tmp_path,
            backends={"fake": fake},
            clock=lambda: datetime(2026, 1, 1),
        ) as naive,
        pytest.raises(ConfigurationError, match="naive"),
    ):
        naive.run(reply("pass\n"))


def test_the_backend_session_is_opened_once_and_kept_across_steps(
    session: Session, fake: FakeBackend
) -> None:
    first = session.run(reply("x = 1\n"))
    second = session.run(reply("print(x)\n"))
    assert len(fake.sessions) == 1
    assert [r.action_id for r in fake.sessions[0].requests] == [
        first.action.action_id,
        second.action.action_id,
    ]


def test_open_receives_the_policy_requirements_and_only_passthrough_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SAFEEXEC_TEST_LANG", "C.UTF-8")
    monkeypatch.setenv("SAFEEXEC_TEST_SECRET", "hunter2")
    policy = dataclasses.replace(
        POLICY,
        backends=BackendsConfig(allowed=("fake",), default="fake", require=("rlimits",)),
        imports=ImportsConfig(allow=("math", "json")),
        sandbox=SandboxConfig(env_passthrough=("SAFEEXEC_TEST_LANG", "SAFEEXEC_TEST_ABSENT")),
    )
    fake = FakeBackend(not_executed, layers=frozenset({"rlimits", "seccomp"}))
    workdir = tmp_path / "wd"
    state = tmp_path / "state"
    with Session(policy=policy, state_dir=state, workdir=workdir, backends={"fake": fake}) as s:
        s.run(reply("pass\n"))
    (opened,) = [fake_session.opened for fake_session in fake.sessions]
    assert opened.workdir == workdir and workdir.is_dir()
    assert opened.require == frozenset({"rlimits"})
    assert opened.imports == ("math", "json")
    assert opened.env == {"SAFEEXEC_TEST_LANG": "C.UTF-8"}
    assert opened.limits == policy.limits
    assert opened.tools is None


def test_a_reply_without_code_is_denied_with_sx006_and_audited(
    session: Session, fake: FakeBackend
) -> None:
    outcome = session.run("I think we are done here.")
    assert outcome.decision.verdict is Verdict.DENY
    assert [f.rule for f in outcome.decision.findings] == ["SX006"]
    assert outcome.decision.findings[0].name == "no-code"
    assert outcome.result is None
    assert fake.calls == []
    assert session.audit.read() == (outcome.event,)
    assert outcome.event.status is None and outcome.event.stdout_ref is None


def test_a_syntax_error_is_denied_with_sx001_and_never_reaches_the_backend(
    session: Session, fake: FakeBackend
) -> None:
    outcome = session.run(reply("print('unclosed'\n"))
    assert outcome.decision.verdict is Verdict.DENY
    (finding,) = outcome.decision.findings
    assert finding.rule == "SX001"
    assert finding.span is not None and finding.span.start_line >= 1
    assert outcome.result is None
    assert fake.calls == []
    assert session.audit.read() == (outcome.event,)


def test_a_deny_finding_keeps_the_code_from_running(
    session: Session, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def deny(
        parsed: Parsed, policy: Policy, *, estimate: object = None, mode: object = None
    ) -> tuple[Finding, ...]:
        return (
            Finding(
                rule="SX201",
                name="import-outside-allowlist",
                message="import of 'os' is not allowed",
                severity=Severity.HIGH,
                enforcement=Enforcement.DENY,
            ),
        )

    monkeypatch.setattr(gate_module, "scan", deny)
    outcome = session.run(reply("import os\n"))
    assert outcome.decision.verdict is Verdict.DENY
    assert [f.rule for f in outcome.event.findings] == ["SX201"]
    assert fake.calls == []


def test_a_crashing_check_fails_closed_with_sx900(
    session: Session, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(
        parsed: Parsed, policy: Policy, *, estimate: object = None, mode: object = None
    ) -> tuple[Finding, ...]:
        raise RecursionError("too deep")

    monkeypatch.setattr(gate_module, "scan", crash)
    outcome = session.run(reply("x = 1\n"))
    assert outcome.decision.verdict is Verdict.DENY
    assert [(f.rule, f.name) for f in outcome.decision.findings] == [("SX900", "check-crashed")]
    assert fake.calls == []


def test_a_crashing_extractor_fails_closed_with_sx900(
    session: Session, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(text: str) -> tuple[Action, ...]:
        raise ValueError("bad text")

    monkeypatch.setattr(session_module, "extract", crash)
    outcome = session.run(reply("x = 1\n"))
    assert [f.rule for f in outcome.decision.findings] == ["SX900"]
    assert fake.calls == []
    assert session.audit.read() == (outcome.event,)


def test_needs_approval_without_an_approver_is_denied(
    session: Session, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "scan", _approve_everything)
    outcome = session.run(reply("x = 1\n"))
    assert outcome.decision.verdict is Verdict.DENY
    assert [f.rule for f in outcome.decision.findings] == ["TEAM001"]
    assert fake.calls == []
    assert session.statistics().approvals_refused == 1


@pytest.mark.parametrize("answer", [True, False, "yes"])
def test_the_approver_decides_needs_approval(
    tmp_path: Path, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch, answer: object
) -> None:
    monkeypatch.setattr(gate_module, "scan", _approve_everything)
    asked: list[tuple[Decision, Action]] = []

    def approver(decision: Decision, action: Action) -> bool:
        asked.append((decision, action))
        return answer  # type: ignore[return-value]

    with Session(
        policy=POLICY, state_dir=tmp_path, backends={"fake": fake}, approver=approver
    ) as s:
        outcome = s.run(reply("x = 1\n"))
    ((decision, action),) = asked
    assert decision.verdict is Verdict.NEEDS_APPROVAL
    assert action == outcome.action
    if answer is True:
        assert outcome.decision.verdict is Verdict.NEEDS_APPROVAL
        assert outcome.result is not None
        assert len(fake.calls) == 1
    else:  # only a literal True approves
        assert outcome.decision.verdict is Verdict.DENY
        assert outcome.result is None
        assert fake.calls == []


def test_a_crashing_approver_approves_nothing(
    tmp_path: Path, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate_module, "scan", _approve_everything)

    def approver(decision: Decision, action: Action) -> bool:
        raise RuntimeError("approval service down")

    with Session(
        policy=POLICY, state_dir=tmp_path, backends={"fake": fake}, approver=approver
    ) as s:
        assert s.run(reply("x = 1\n")).decision.verdict is Verdict.DENY
    assert fake.calls == []


def test_each_step_charges_the_budget(session: Session, handler: Printer) -> None:
    handler.reply = FakeReply(usage=Usage(cpu_seconds=0.75, tool_calls=2))
    assert session.budget.steps_left == 10
    session.run(reply("pass\n"))
    session.run("no code here")
    budget = session.budget
    assert budget.steps_left == 8
    assert budget.cpu_seconds_left == pytest.approx(9.25)
    assert budget.tool_calls_left == 3
    assert session.audit.read()[-1].budget == budget


def test_an_exhausted_step_budget_denies_with_sx510_instead_of_raising(
    tmp_path: Path, fake: FakeBackend
) -> None:
    policy = dataclasses.replace(POLICY, budget=BudgetConfig(steps=2, cpu_seconds=10.0))
    with Session(policy=policy, state_dir=tmp_path, backends={"fake": fake}) as s:
        outcomes = [s.run(reply("pass\n")) for _ in range(3)]
    assert [o.decision.verdict for o in outcomes] == [Verdict.ALLOW, Verdict.ALLOW, Verdict.DENY]
    (finding,) = outcomes[2].decision.findings
    assert (finding.rule, finding.evidence) == ("SX510", "steps")
    assert len(fake.calls) == 2


def test_the_cpu_limit_shrinks_to_the_cpu_budget_left(
    tmp_path: Path, handler: Printer, fake: FakeBackend
) -> None:
    handler.reply = FakeReply(usage=Usage(cpu_seconds=2.5))
    policy = dataclasses.replace(POLICY, budget=BudgetConfig(steps=10, cpu_seconds=3.0))
    with Session(policy=policy, state_dir=tmp_path, backends={"fake": fake}) as s:
        s.run(reply("pass\n"))
        s.run(reply("pass\n"))
        denied = s.run(reply("pass\n"))
    assert [r.limits.cpu_seconds for r in fake.calls] == [2.0, 0.5]
    assert [f.evidence for f in denied.decision.findings] == ["cpu_seconds"]


def test_a_mode_the_policy_does_not_allow_is_denied_with_sx520(
    tmp_path: Path, fake: FakeBackend
) -> None:
    with Session(policy=POLICY, mode="native", state_dir=tmp_path, backends={"fake": fake}) as s:
        outcome = s.run(reply("pass\n"))
    assert [f.rule for f in outcome.decision.findings] == ["SX520"]
    assert fake.calls == []


def test_backend_sessions_are_kept_per_mode(tmp_path: Path) -> None:
    fake, other = FakeBackend(not_executed), FakeBackend(not_executed)
    backends = {"fake": fake, "other": other}
    with Session(policy=POLICY, state_dir=tmp_path, backends=backends) as s:
        s.run(reply("pass\n"))
        s.mode = "other"
        s.run(reply("pass\n"))
        s.run(reply("pass\n"))
        assert s.statistics().open_backends == ("fake", "other")
    assert (len(fake.calls), len(other.calls)) == (1, 2)
    assert all(fs.closed for fs in fake.sessions + other.sessions)


def test_a_mode_without_a_backend_raises_unavailable_after_auditing(
    tmp_path: Path, fake: FakeBackend
) -> None:
    with Session(policy=POLICY, mode="other", state_dir=tmp_path, backends={"fake": fake}) as s:
        with pytest.raises(BackendUnavailable, match="mode='other'"):
            s.run(reply("pass\n"))
        (event,) = s.audit.read()
    assert event.verdict is Verdict.DENY
    assert [f.rule for f in event.findings] == ["SX901"]


def test_a_backend_missing_a_required_layer_is_unavailable(tmp_path: Path) -> None:
    policy = dataclasses.replace(
        POLICY, backends=BackendsConfig(allowed=("fake",), default="fake", require=("landlock",))
    )
    with Session(
        policy=policy, state_dir=tmp_path, backends={"fake": FakeBackend(not_executed)}
    ) as s:
        with pytest.raises(BackendUnavailable, match="landlock"):
            s.run(reply("pass\n"))
        assert len(s.audit.read()) == 1


def test_a_backend_bug_is_an_internal_error_and_the_session_survives(tmp_path: Path) -> None:
    answers = iter([RuntimeError("worker protocol bug"), FakeReply(stdout="fine\n")])

    def flaky(request: ExecRequest) -> FakeReply:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    fake = FakeBackend(flaky)
    with Session(policy=POLICY, state_dir=tmp_path, backends={"fake": fake}) as s:
        with pytest.raises(InternalError, match="worker protocol bug") as caught:
            s.run(reply("x = 1\n"))
        assert isinstance(caught.value.__cause__, RuntimeError)
        recovered = s.run(reply("x = 1\n"))
        assert recovered.result is not None and recovered.result.status is ExecStatus.OK
        failed, ok = s.audit.read()
        assert s.statistics().internal_errors == 1
    assert failed.verdict is Verdict.DENY
    assert [f.rule for f in failed.findings] == ["SX902"]
    assert failed.status is None
    assert ok == recovered.event
    assert len(fake.sessions) == 2
    assert fake.sessions[0].closed


def test_every_outcome_is_audited_in_order(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = [
        session.run(reply("x = 1\n")),
        session.run("no code"),
        session.run(reply("def f(:\n")),
        session.run(reply("print(1)\n")),
    ]
    events = session.audit.read()
    assert events == tuple(o.event for o in outcomes)
    assert [e.verdict for e in events] == [
        Verdict.ALLOW,
        Verdict.DENY,
        Verdict.DENY,
        Verdict.ALLOW,
    ]
    stats = session.statistics()
    assert stats.steps == 4
    assert stats.verdicts == {"allow": 2, "deny": 2}
    assert stats.statuses == {"ok": 2}
    assert stats.cpu_seconds == pytest.approx(1.0)
    assert stats.audit_events == 4
    assert stats.audit_path == session.audit.path
    with pytest.raises(TypeError):  # a frozen snapshot, like every statistics() value
        stats.verdicts["allow"] = 0  # type: ignore[index]


def test_run_action_runs_an_action_built_by_the_host(session: Session, fake: FakeBackend) -> None:
    action = Action.create("y = 2\n", action_id="host-1")
    outcome = session.run_action(action)
    assert outcome.action is action
    assert fake.calls[0].action_id == "host-1"
    assert outcome.event.action_id == "host-1"


def test_arun_runs_in_a_thread_for_asyncio(session: Session, fake: FakeBackend) -> None:
    async def main() -> list[Verdict]:
        outcomes = await asyncio.gather(session.arun(reply("a = 1\n")), session.arun("nothing"))
        return [o.decision.verdict for o in outcomes]

    assert sorted(asyncio.run(main())) == [Verdict.ALLOW, Verdict.DENY]
    assert len(session.audit.read()) == 2


def test_close_is_idempotent_and_a_closed_session_refuses_to_run(
    tmp_path: Path, fake: FakeBackend
) -> None:
    s = Session(policy=POLICY, state_dir=tmp_path, backends={"fake": fake})
    s.run(reply("pass\n"))
    s.close()
    s.close()
    assert fake.sessions[0].closed
    with pytest.raises(ConfigurationError, match="closed"):
        s.run(reply("pass\n"))


def test_state_lives_in_the_per_user_state_dir_and_the_workdir_is_temporary_by_default(
    tmp_path: Path, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    with Session(policy=POLICY, backends={"fake": fake}, session_id="s-x") as s:
        s.run(reply("pass\n"))
        workdir = fake.sessions[0].opened.workdir
        assert workdir.is_dir() and workdir.name.startswith("safeexec-s-x-")
        assert stat.S_IMODE(workdir.stat().st_mode) == 0o700
    assert s.state_dir == tmp_path / "xdg" / "safeexec"
    assert not workdir.exists()  # a workdir the session made is removed when it closes
    # Relative paths are pinned at construction: the worker runs in a directory of its own.
    with Session(policy=POLICY, backends={"fake": fake}, workdir=Path("wd")) as s:
        assert s.workdir == tmp_path / "wd"
        s.run(reply("pass\n"))
    assert (tmp_path / "wd").is_dir()  # a workdir the caller named is kept
    state = tmp_path / "xdg" / "safeexec"
    assert (state / "audit.jsonl").is_file() and (state / "blobs").is_dir()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert not (tmp_path / ".safeexec").exists()


def test_the_default_registry_knows_fake_and_rejects_unknown_modes() -> None:
    assert isinstance(default_backend("fake"), FakeBackend)
    with pytest.raises(BackendUnavailable, match="no backend named name='teleport'"):
        default_backend("teleport")


def test_the_default_registry_is_used_when_no_backends_are_given(tmp_path: Path) -> None:
    with Session(policy=POLICY, state_dir=tmp_path) as s:
        outcome = s.run(reply("print('hi')\n"))
    assert outcome.result is not None
    assert "not executed" in outcome.result.message


def test_a_policy_name_is_loaded_with_the_policy_loader(tmp_path: Path) -> None:
    with Session(policy="default", state_dir=tmp_path) as s:
        assert s.policy.info.id == "default"
        assert s.policy.digest


def test_sessions_share_the_process_backends_and_leave_them_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[str] = []
    made: list[FakeBackend] = []

    class ClosingFake(FakeBackend):
        def close(self) -> None:
            closed.append(self.name)

    def make(name: str) -> FakeBackend:
        made.append(ClosingFake(not_executed))
        return made[-1]

    shared = SharedBackends(make)
    monkeypatch.setattr(session_module, "shared_backends", shared)
    for _ in range(3):
        with Session(policy=POLICY, state_dir=tmp_path) as s:
            s.run(reply("pass\n"))
    assert len(made) == 1 and closed == []  # one backend served three sessions, still open
    assert [session.closed for session in made[0].sessions] == [True, True, True]
    assert shared.close() == [] and closed == ["fake"]


def test_backends_passed_in_stay_open_for_their_owner(tmp_path: Path) -> None:
    closed: list[str] = []

    class ClosingFake(FakeBackend):
        def close(self) -> None:
            closed.append(self.name)

    mine = ClosingFake(not_executed)
    with Session(policy=POLICY, state_dir=tmp_path, backends={"fake": mine}) as s:
        s.run(reply("pass\n"))
    assert closed == []
    assert mine.sessions[0].closed


def test_a_configuration_error_from_open_reaches_the_caller_unchanged(tmp_path: Path) -> None:
    class Misconfigured(FakeBackend):
        def open(self, spec: SessionSpec) -> FakeSession:
            raise ConfigurationError("unknown confinement layer require=['x']")

    with Session(
        policy=POLICY, state_dir=tmp_path, backends={"fake": Misconfigured(not_executed)}
    ) as s:
        with pytest.raises(ConfigurationError, match="unknown confinement layer"):
            s.run(reply("pass\n"))
        (event,) = s.audit.read()
    assert [f.rule for f in event.findings] == ["SX901"]


def test_public_exports_are_pinned() -> None:
    assert session_module.__all__ == [
        "TOOL_BACKEND",
        "Approver",
        "Session",
        "SessionStatistics",
        "shared_backends",
    ]


def test_a_reply_that_is_not_text_is_a_configuration_error(session: Session) -> None:
    with pytest.raises(ConfigurationError, match="got bytes"):
        session.run(b"```python\nx = 1\n```")  # type: ignore[arg-type]
    assert session.audit.read() == ()


def test_a_backend_that_cannot_be_imported_is_unavailable_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "safeexec.backends.native", None)
    with pytest.raises(BackendUnavailable, match=r"name='native' cannot be loaded here: .*native"):
        default_backend("native")


def test_the_backend_runs_the_checked_text_not_the_raw_action(
    session: Session, fake: FakeBackend
) -> None:
    from safeexec.parse import parse

    raw = Action.create("x = 1\r\nprint(x)   \r\n\r\n")
    checked = parse(raw)
    assert isinstance(checked, Parsed) and checked.code != raw.code
    session.run_action(raw)
    assert fake.calls[0].code == checked.code


def test_every_events_code_is_in_the_blob_store_under_its_hash(session: Session) -> None:
    outcomes = [session.run(reply("y = 2\n")), session.run(reply("def f(:\n")), session.run("none")]
    for outcome in outcomes:
        stored = session.blobs.get(f"blob://sha256:{outcome.event.code_sha256}")
        assert stored.decode() == outcome.action.code


GOLDEN = Path(__file__).parent.parent / "golden" / "outcome_syntax_error.json"


def test_a_denied_outcome_matches_the_golden_file(tmp_path: Path, fake: FakeBackend) -> None:
    """Pins the whole JSON form of one step: action, decision, observation, audit event.

    Regenerate after an intended change with ``SAFEEXEC_UPDATE_GOLDEN=1``.
    """
    import json
    import os

    with Session(
        policy=POLICY, state_dir=tmp_path, backends={"fake": fake}, clock=TickingClock(),
        session_id="s-golden",
    ) as s:  # fmt: skip
        outcome = s.run_action(Action.create("x = 1\nprint((x, 2)\n", action_id="a-golden"))
    data = outcome.to_json()
    assert isinstance(data, dict) and isinstance(data["event"], dict)
    data["event"]["sandbox_image"] = "<interpreter>"  # differs between Python builds
    data["event"]["sandbox_version"] = "<safeexec version>"
    assert str(data["event"]["environment_ref"]).startswith("blob://sha256:")
    data["event"]["environment_ref"] = "<this environment's fingerprint>"  # installed packages
    genesis = json.loads((tmp_path / "audit.jsonl.head").read_bytes())["genesis"]
    assert data["event"]["prev_sha256"] == genesis
    data["event"]["prev_sha256"] = "<this log's random genesis>"
    if os.environ.get("SAFEEXEC_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(data, indent=2) + "\n")
    assert data == json.loads(GOLDEN.read_text())


def test_cpu_seconds_narrows_one_steps_cpu_limit_and_never_widens_it(
    session: Session, handler: Printer
) -> None:
    narrowed = session.run("```python\nx = 1\n```", cpu_seconds=0.5)
    assert handler.requests[-1].limits.cpu_seconds == 0.5
    assert narrowed.event.limits.cpu_seconds == 0.5  # the audit states the limit that applied
    session.run_action(Action.create("y = 2"), cpu_seconds=100.0)
    assert handler.requests[-1].limits.cpu_seconds == 2.0  # the policy's stands
    with pytest.raises(ConfigurationError):
        session.run("x", cpu_seconds=0)
