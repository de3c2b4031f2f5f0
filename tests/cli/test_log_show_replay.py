"""``safeexec log show`` (a readable timeline) and ``safeexec log replay`` (re-run, compare)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.audit.blobs import BlobStore
from safeexec.audit.timeline import show_log
from safeexec.cli.app import app
from safeexec.harness.replay import replay_log
from safeexec.session.session import Session


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


STEPS = [
    fenced("import random\nrandom.seed(7)\nvalue = random.random()\nprint(value)\n"),
    fenced("print(value * 2)\n"),
    fenced("eval('1')\n"),  # denied
    fenced("print('\\x1b[2Jcleared')\n"),
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    state = tmp_path_factory.mktemp("log") / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        for step in STEPS:
            session.run(step)
        return state, session.session_id


def test_show_prints_every_step_in_order_with_code_verdict_and_output(
    recorded: tuple[Path, str],
) -> None:
    state, session_id = recorded
    text = show_log(state)
    positions = [text.index(f"#{n} ") for n in range(1, len(STEPS) + 1)]
    assert positions == sorted(positions)
    assert "random.seed(7)" in text and "allow → ok (exit 0)" in text
    assert "SX301" in text and ": deny," in text
    assert session_id in text and "4 steps in 1 sessions; chain verified" in text
    assert "\x1b" not in text  # what the code printed is escaped like an observation


def test_show_names_a_missing_blob_instead_of_hiding_the_step(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        outcome = session.run(fenced("print('gone soon')\n"))
    assert outcome.result is not None
    BlobStore(state / "blobs").location(outcome.result.stdout).unlink()
    text = show_log(state)
    assert f"[missing blob {outcome.result.stdout.uri}]" in text


def test_show_on_a_tampered_log_fails_with_exit_1(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        session.run(fenced("print(1)\n"))
    log = state / "audit.jsonl"
    log.write_text(log.read_text().replace('"allow"', '"deny"'))
    done = CliRunner().invoke(app, ["log", "show", str(state)])
    assert done.exit_code == 1
    assert "log show" in done.output


def test_show_never_creates_a_state_dir(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["log", "show", str(tmp_path / "typo")])
    assert done.exit_code == 1
    assert not (tmp_path / "typo").exists()


def test_replay_of_a_seeded_session_reproduces_every_output(recorded: tuple[Path, str]) -> None:
    state, session_id = recorded
    report = replay_log(state, session_id=session_id)
    assert report.ok
    assert [step.same for step in report.steps] == [True] * len(STEPS)
    assert report.environment_changes == ()
    done = CliRunner().invoke(app, ["log", "replay", str(state)])
    assert done.exit_code == 0, done.output
    assert f"session {session_id}: 4 steps, 0 differ" in done.output


def test_replay_names_the_step_whose_output_differs(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with Session(policy="default", mode="native", state_dir=state) as session:
        session.run(fenced("print('same')\n"))
        session.run(fenced("import os\nprint(os.urandom(8).hex())\n"))
    report = replay_log(state)
    first, second = report.steps
    assert first.same
    assert not second.same and second.differences[0].startswith("stdout differs at line 1")
    done = CliRunner().invoke(app, ["log", "replay", str(state)])
    assert done.exit_code == 1
    assert "#2 " in done.output and "DIFFERS" in done.output


def test_replay_reports_a_changed_policy(recorded: tuple[Path, str]) -> None:
    state, session_id = recorded
    report = replay_log(state, session_id=session_id, policy="data-analysis")
    assert any(change.startswith("policy default: digest") for change in report.environment_changes)


def test_replay_of_an_unknown_session_is_a_usage_error(recorded: tuple[Path, str]) -> None:
    state, _session_id = recorded
    done = CliRunner().invoke(app, ["log", "replay", str(state), "--session", "s-nope"])
    assert done.exit_code == 2
    assert "no steps of session id 's-nope'" in done.output


def test_version_flag_prints_the_version() -> None:
    from safeexec import __version__

    done = CliRunner().invoke(app, ["--version"])
    assert done.exit_code == 0
    assert done.output.strip() == __version__


@pytest.mark.parametrize("group", [[], ["log"], ["policy"]])
def test_help_shows_examples(group: list[str]) -> None:
    done = CliRunner().invoke(app, [*group, "--help"])
    assert done.exit_code == 0
    assert "Examples:" in done.output


def test_show_of_one_session_in_a_shared_state_dir_says_how_many_others_it_skipped(
    tmp_path: Path,
) -> None:
    state = tmp_path / "shared"
    ids = []
    for steps in (1, 2, 3):  # three sessions of one user, as in the default state dir
        with Session(policy="default", mode="restricted", state_dir=state) as session:
            for n in range(steps):
                session.run(fenced(f"print({n})\n"))
            ids.append(session.session_id)
    shown = CliRunner().invoke(app, ["log", "show", str(state), "--session", ids[1]])
    assert shown.exit_code == 0, shown.output
    assert ids[1] in shown.output and ids[0] not in shown.output and ids[2] not in shown.output
    last = shown.output.strip().splitlines()[-1]
    assert last == (
        f"2 steps of session {ids[1]}; skipped 2 other sessions (4 steps); "
        "chain verified (6 events)"
    )
    every = CliRunner().invoke(app, ["log", "show", str(state)])
    assert all(i in every.output for i in ids)
    assert every.output.strip().endswith("6 steps in 3 sessions; chain verified (6 events)")
    unknown = CliRunner().invoke(app, ["log", "show", str(state), "--session", "s-none"])
    assert unknown.exit_code == 2 and "no session 's-none'" in unknown.output
    assert "(3 sessions)" in unknown.output
