"""The ablation benchmark: its suite, its references, and a slice of its matrix end to end."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchmarks.ablation import make_tasks
from benchmarks.ablation.matrix import Cell, build_cells, with_model
from benchmarks.ablation.report import END_REASONS, aggregate, charts, markdown, strip_timings
from benchmarks.ablation.run import SUITE_DIR, cell_task, reference_reproduces, run_cells
from benchmarks.ablation.suite.tools import TRANSFORMS, make_environment
from safeexec.harness import load_suite

SUITE = load_suite(SUITE_DIR)
TASKS = {t.id: t for t in SUITE.tasks}
WRITING = {"delete_page", "transfer", "cancel_booking", "place_order", "send_email"}


def test_the_suite_has_80_multi_tool_tasks_in_six_scenarios() -> None:
    assert len(SUITE.tasks) >= 80
    assert set(SUITE.scenarios) == {"web", "finance", "travel", "decode", "dna", "shop"}
    assert {t.scenario for t in SUITE.tasks} == set(SUITE.scenarios)
    for task in SUITE.tasks:
        assert len(task.tools) >= 2, task.id
        authorized = {e.tool for e in task.authorized_effects}
        # A task that asks for an effect authorizes it; an injection task carries its attack tool.
        assert authorized <= set(task.tools) & WRITING, task.id
        if "injection" in task.tags:
            assert set(task.tools) & WRITING - authorized, task.id


def _calls_of_reference(task_id: str) -> int:
    """How many tool calls the task's (trusted) reference program makes under plain Python."""
    task = TASKS[task_id]
    env = make_environment(0)
    made = [0]

    def counted(function: Callable[..., object]) -> Callable[..., object]:
        def call(**kwargs: object) -> object:
            made[0] += 1
            return function(**kwargs)

        return call

    names: dict[str, object] = {
        s.name: counted(s.function) for s in env.tools if s.name in task.tools
    }
    names["submit"] = lambda value: None
    exec(compile(task.reference, task.id, "exec"), names)
    return made[0]


def test_the_median_task_needs_5_to_12_calls() -> None:
    calls = [_calls_of_reference(t) for t in TASKS]
    assert 5 <= statistics.median(calls) <= 12, sorted(calls)
    deep = [_calls_of_reference(t.id) for t in SUITE.tasks if "deep" in t.tags]
    assert min(deep) >= 5 and max(deep) <= 12
    assert all(t.max_turns and t.max_turns > 12 for t in SUITE.tasks if "deep" in t.tags)


def test_the_transform_factor_adds_the_transform_tools_to_json_and_text_only() -> None:
    cells = build_cells(SUITE, "quick")
    transformed = [c for c in cells if c.mode == "gateway+transforms"]
    assert {c.format for c in transformed} == {"json", "text"}
    assert {c.condition for c in transformed} == {"clean"}
    task = TASKS[transformed[0].task]
    assert cell_task(SUITE, transformed[0]).tools == (*task.tools, *TRANSFORMS)
    plain = dataclasses.replace(transformed[0], mode="gateway")
    assert cell_task(SUITE, plain).tools == task.tools
    tools = {s.name: s for s in make_environment(0).tools}
    assert tools["total"].function(values=[1.5, 2]) == 3.5
    assert tools["filter_numbers"].function(values=[3, 9, 4], op=">", threshold=3.5) == [9, 4]
    assert tools["sort_numbers"].function(values=[3, 9, 4], descending=True) == [9, 4, 3]


def test_a_task_the_dsl_cannot_express_is_a_failure_of_the_dsl_column() -> None:
    cells = build_cells(SUITE, "quick")
    missing = [c for c in cells if c.format == "dsl" and TASKS[c.task].reference_dsl is None]
    assert missing and {c.condition for c in missing} == {"clean"}
    full = build_cells(SUITE, "full")
    dsl_clean = {c.task for c in full if c.format == "dsl" and c.condition == "clean"}
    assert dsl_clean == set(TASKS)  # every task, none dropped
    (row,) = run_cells(missing[:1], workers=1)
    assert row["success"] is False and row["dsl_expressible"] is False


def test_the_generator_wrote_the_committed_tasks() -> None:
    committed = [json.loads(line) for line in (SUITE_DIR / "tasks.jsonl").read_text().splitlines()]
    assert committed == json.loads(json.dumps(make_tasks.TASKS, sort_keys=True))


def test_a_wrong_reference_is_caught(tmp_path: Path) -> None:
    task = TASKS["fin-eur-acme"]
    wrong = dataclasses.replace(task, reference=task.reference.replace('"EUR"', '"GBP"'))
    assert reference_reproduces(SUITE, task, "restricted", tmp_path)
    assert not reference_reproduces(SUITE, wrong, "restricted", tmp_path)


SLICE = [
    Cell(task="fin-eur-acme", format=f, mode=m, agent="oracle", condition="clean")
    for f, m in (("code", "restricted"), ("json", "gateway"), ("text", "gateway"), ("dsl", "dsl"))
] + [
    Cell(
        task="fin-portfolio-eur", format="json", mode="gateway", agent="oracle", condition="clean"
    ),
    Cell(
        task="web-seats-chess",
        format="code",
        mode="restricted",
        agent="gullible",
        condition="injection",
        grants="broad",
    ),
    Cell(
        task="web-seats-chess",
        format="code",
        mode="restricted",
        agent="gullible",
        condition="injection",
        grants="scoped",
    ),
    Cell(
        task="fin-eur-bolt",
        format="json",
        mode="gateway",
        agent="gullible",
        condition="injection",
        grants="broad",
    ),
    Cell(
        task="fin-eur-bolt",
        format="json",
        mode="gateway",
        agent="gullible",
        condition="injection",
        grants="scoped",
    ),
    Cell(
        task="web-seats-poetry",
        format="text",
        mode="gateway",
        agent="oracle",
        condition="fault",
        fault="value_error",
        feedback="rich",
    ),
    Cell(
        task="web-seats-poetry",
        format="text",
        mode="gateway",
        agent="oracle",
        condition="fault",
        fault="value_error",
        feedback="generic",
    ),
    Cell(
        task="web-seats-poetry",
        format="code",
        mode="restricted",
        agent="oracle",
        condition="fault",
        fault="drift",
        feedback="rich",
    ),
    Cell(
        task="web-seats-poetry",
        format="code",
        mode="restricted",
        agent="oracle",
        condition="fault",
        fault="drift",
        feedback="generic",
    ),
]


@pytest.fixture(scope="module")
def local_rows() -> list[dict[str, object]]:
    return run_cells(SLICE, executor="local", workers=2, chunk=3)  # type: ignore[return-value]


def _row(rows: list[dict[str, object]], **match: str) -> dict[str, object]:
    (found,) = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return found


def test_the_oracle_solves_in_one_action_or_one_turn_per_call(local_rows: list) -> None:
    for fmt in ("code", "dsl"):
        row = _row(local_rows, task="fin-eur-acme", format=fmt)
        assert row["success"] and row["actions"] == 1 and row["turns"] == 1
    for fmt in ("json", "text"):
        row = _row(local_rows, task="fin-eur-acme", format=fmt)
        assert row["success"] and row["turns"] == row["tool_calls"] + 1 == 3
    long = _row(local_rows, task="fin-portfolio-eur")
    assert long["end_reason"] == "max_turns" and not long["success"]


def test_an_injected_effect_is_counted_with_broad_grants_and_stopped_when_scoped(
    local_rows: list,
) -> None:
    for task, fmt, stage in (
        ("web-seats-chess", "code", "gate"),
        ("fin-eur-bolt", "json", "capability"),
    ):
        broad = _row(local_rows, task=task, format=fmt, grants="broad")
        scoped = _row(local_rows, task=task, format=fmt, grants="scoped")
        assert broad["unauthorized_effects"]["state"], broad  # type: ignore[index]
        assert scoped["unauthorized_effects"] == {"state": [], "secrets_in_arguments": []}
        assert stage in scoped["refusals"], scoped  # type: ignore[operator]
        assert broad["success"] and scoped["success"]  # utility survives the attack


def test_rich_feedback_recovers_what_generic_feedback_cannot(local_rows: list) -> None:
    for fault in ("value_error", "drift"):
        rich = _row(local_rows, fault=fault, feedback="rich")
        generic = _row(local_rows, fault=fault, feedback="generic")
        assert rich["fault_applied"] and generic["fault_applied"]
        assert rich["success"] and not generic["success"], (rich, generic)


def test_the_report_is_computed_from_the_rows(local_rows: list, tmp_path: Path) -> None:
    summary = aggregate(local_rows, SUITE)
    assert summary["broad_unauthorized_effects"] == 2
    assert summary["scoped_unauthorized_effects"] == 0
    recovery = summary["recovery"]
    assert recovery["value_error/rich"]["recovery_rate"] == 1.0  # type: ignore[index]
    assert recovery["value_error/generic"]["recovery_rate"] == 0.0  # type: ignore[index]
    assert summary["oracle_json_text_max_turns"] == ["fin-portfolio-eur"]
    table = markdown(summary)
    assert "| scoped/code/restricted | 1 | 0.0 | 0.00–0.79 | 1.0 | gate:SX603 ×1 |" in table
    assert "| agent/format/mode | " + " | ".join(END_REASONS) + " | security refusals |" in table
    clean = summary["clean"]
    for entry in clean.values():  # type: ignore[union-attr]
        runs, ends = entry["runs"], entry["end_reasons"]
        assert sum(ends.values()) == runs and entry["success_ci95"] is not None
    written = charts(summary, tmp_path)
    names = {p.stem for p in written}
    assert {"success_by_format_mode", "end_reasons", "attack_success"} <= names
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_the_ray_executor_gives_the_local_results(local_rows: list) -> None:
    ray_rows = run_cells(SLICE[::2], executor="ray", workers=2, chunk=2)  # a local cluster
    assert strip_timings(ray_rows) == strip_timings(local_rows[::2])  # type: ignore[arg-type]


# The driver's side of the cluster test, in its own interpreter (Ray fixes its network settings
# when it is imported): the cells come as JSON, the rows go to stdout as JSON.
_DRIVER = """
import json, sys
from benchmarks.ablation.matrix import Cell
from benchmarks.ablation.run import run_cells
cells = [Cell(**c) for c in json.loads(sys.argv[1])]
print(json.dumps(run_cells(cells, executor="ray", workers=2, chunk=2)))
"""


@pytest.fixture
def ray_head(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """A Ray head node on loopback, started here (its own process group, its own token): the
    address and environment a driver connects with, and its temp dir; stopped (the group) after."""
    port = _free_port()
    scratch = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths are short
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RAY_")},
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # bind and advertise loopback, not eth0
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
    }
    head = subprocess.Popen(
        [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
         "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={scratch}"],
        cwd=tmp_path, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_listening(head, port, deadline=time.monotonic() + 180)
        yield f"127.0.0.1:{port}", env, scratch
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)  # the raylet and GCS when they lag behind
        head.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(head: subprocess.Popen[bytes], port: int, *, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert head.poll() is None, f"ray start exited with {head.returncode}"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"no Ray head on 127.0.0.1:{port}")


def test_the_ray_executor_connects_to_a_running_cluster_by_address(
    ray_head: tuple[str, dict[str, str], Path], local_rows: list
) -> None:
    address, env, scratch = ray_head
    cells = json.dumps([c.to_json() for c in SLICE[::2]])
    driver = subprocess.run(
        [sys.executable, "-c", _DRIVER, cells],
        env={**env, "RAY_ADDRESS": address},  # what `ray.init(num_cpus=...)` refused
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    rows = json.loads(driver.stdout.splitlines()[-1])
    assert strip_timings(rows) == strip_timings(local_rows[::2])
    # The tasks ran in workers of the head started above: their logs are in its session.
    assert list(scratch.glob("session_*/logs/python-core-worker-*.log"))


def test_the_quick_matrix_covers_every_condition_and_combination() -> None:
    cells = build_cells(SUITE, "quick")
    assert {c.condition for c in cells} == {"clean", "fault", "injection"}
    assert {(c.format, c.mode) for c in cells} == {
        ("code", "native"),
        ("code", "restricted"),
        ("json", "gateway"),
        ("text", "gateway"),
        ("json", "gateway+transforms"),
        ("text", "gateway+transforms"),
        ("dsl", "dsl"),
    }
    assert {c.grants for c in cells if c.condition == "injection"} == {"broad", "scoped"}
    full = build_cells(SUITE, "full")
    assert len({c.task for c in full if c.agent == "oracle" and c.condition == "clean"}) == len(
        SUITE.tasks
    )


def test_a_recorded_matrix_replays_to_the_same_numbers(tmp_path: Path) -> None:
    cells = [SLICE[1], SLICE[6], SLICE[9], SLICE[10]]  # json oracle, scoped code, faults
    live = run_cells(cells, workers=2, record=tmp_path)
    replayed = run_cells(with_model(cells, f"replay:{tmp_path}"), workers=2)
    keep = ("task", "format", "mode", "condition", "fault", "feedback", "grants", "success",
            "end_reason", "turns", "tool_calls", "invalid_actions", "refusals",
            "unauthorized_effects", "answer")  # fmt: skip
    assert [{k: r[k] for k in keep} for r in replayed] == [{k: r[k] for k in keep} for r in live]
    assert {r["model"] for r in replayed} == {f"replay:{tmp_path}"}
