"""The native backend: notebook semantics, artifacts, files, tools, restarts, layers, threads."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from safeexec.audit.blobs import BlobStore
from safeexec.backends import native
from safeexec.backends.base import SessionSpec, ToolDescriptor, ToolReply
from safeexec.backends.native import NativeBackend, NativeSession, diagnose
from safeexec.errors import BackendError, BackendUnavailable, ConfigurationError
from safeexec.model.codec import JSONValue
from safeexec.model.values import ExecRequest, ExecResult, ExecStatus, Limits, ToolCalled
from safeexec.sandbox.layers import Layer
from safeexec.sandbox.session_env import base_environment


@pytest.fixture(scope="module")
def backend() -> Iterator[NativeBackend]:
    instance = NativeBackend()
    yield instance
    instance.close()


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    # Beside tmp_path, never in it: several tests use tmp_path itself as the workdir.
    return BlobStore(tmp_path.with_name(tmp_path.name + "-blobs"))


@pytest.fixture
def session(backend: NativeBackend, blobs: BlobStore, tmp_path: Path) -> Iterator[NativeSession]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    opened = backend.open(SessionSpec(workdir=workdir, limits=Limits(), blobs=blobs))
    yield opened
    opened.close()


def run(session: NativeSession, code: str, **limits: float) -> ExecResult:
    return session.run(ExecRequest(action_id="t", code=code, limits=Limits(**limits)))  # type: ignore[arg-type]


def out(session: NativeSession, result: ExecResult) -> str:
    return session.blobs.get(result.stdout).decode()


def test_variables_imports_and_files_persist_across_calls(session: NativeSession) -> None:
    run(session, "import math\nradius = 2\nopen('note.txt', 'w').write('kept')")
    result = run(session, "print(round(math.pi * radius**2, 2), open('note.txt').read())")
    assert result.status is ExecStatus.OK
    assert out(session, result) == "12.57 kept\n"


def test_the_value_of_a_final_expression_is_shown(session: NativeSession) -> None:
    assert out(session, run(session, "x = 20\nx * 2 + 2")) == "42\n"
    assert out(session, run(session, "None")) == ""
    assert out(session, run(session, "y = 1")) == ""


def test_a_traceback_shows_only_user_frames(session: NativeSession) -> None:
    result = run(session, "def inner():\n    return 1 / 0\ninner()")
    assert result.status is ExecStatus.ERROR
    assert result.message == "ZeroDivisionError: division by zero"
    stderr = session.blobs.get(result.stderr).decode()
    assert 'File "<cell-1>", line 3' in stderr and "line 2, in inner" in stderr
    assert "safeexec" not in stderr


def test_a_syntax_error_is_an_error_result(session: NativeSession) -> None:
    result = run(session, "def broken(:\n")
    assert result.status is ExecStatus.ERROR
    assert result.message.startswith("SyntaxError")


def test_system_exit_ends_the_cell_not_the_session(session: NativeSession) -> None:
    run(session, "kept = 1")
    assert run(session, "raise SystemExit(3)").status is ExecStatus.ERROR
    assert out(session, run(session, "kept")) == "1\n"


def test_created_and_changed_files_are_artifacts(session: NativeSession) -> None:
    first = run(session, "open('a.csv', 'w').write('x,y\\n1,2\\n'); open('b.txt','w').write('b')")
    assert sorted(a.name for a in first.artifacts) == ["a.csv", "b.txt"]
    csv = next(a for a in first.artifacts if a.name == "a.csv")
    assert csv.media_type == "text/csv"
    assert session.blobs.get(csv.blob) == b"x,y\n1,2\n"
    unchanged = run(session, "open('b.txt', 'a').write('more')")
    assert [a.name for a in unchanged.artifacts] == ["b.txt"]
    assert run(session, "x = 1").artifacts == ()


def test_files_in_the_temporary_directory_are_not_artifacts(session: NativeSession) -> None:
    result = run(
        session,
        "import tempfile\nwith tempfile.NamedTemporaryFile(delete=False) as f:\n    f.write(b'x')",
    )
    assert result.status is ExecStatus.OK
    assert result.artifacts == ()


def test_upload_and_download_round_trip(session: NativeSession) -> None:
    session.upload("data/input.json", json.dumps({"n": 5}).encode())
    result = run(
        session,
        "import json\n"
        "n = json.load(open('data/input.json'))['n']\n"
        "open('out.txt','w').write(str(n * 2))",
    )
    assert result.status is ExecStatus.OK, session.blobs.get(result.stderr)
    assert session.download("out.txt") == b"10"


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "", "a/../../b"])
def test_upload_refuses_names_outside_the_workdir(session: NativeSession, name: str) -> None:
    with pytest.raises(ConfigurationError):
        session.upload(name, b"x")


def test_reset_forgets_state_but_keeps_the_workdir(session: NativeSession) -> None:
    run(session, "secret = 1\nopen('kept.txt', 'w').write('yes')")
    first_pid = session.pid
    session.reset()
    assert session.pid != first_pid
    result = run(session, "print(open('kept.txt').read())\nsecret")
    assert out(session, result) == "yes\n"
    assert result.message == "NameError: name 'secret' is not defined"
    assert not result.state_lost  # an asked-for reset is not a loss


def test_a_dead_worker_is_reported_and_the_next_call_says_state_was_lost(
    session: NativeSession,
) -> None:
    run(session, "x = 1")
    # The worker is pid 1 of its namespace, so it can only die of a real fault, not a kill().
    died = run(session, "import ctypes; ctypes.string_at(0)")
    assert died.status is ExecStatus.KILLED
    assert died.message.startswith("killed by SIGSEGV")
    assert died.state_lost
    after = run(session, "print('fresh')")
    assert after.status is ExecStatus.OK and after.state_lost
    assert "state from before was lost" in after.message
    assert run(session, "print('again')").state_lost is False


def test_usage_is_measured_from_outside(session: NativeSession) -> None:
    result = run(session, "total = 0\nfor i in range(3_000_000):\n    total += i")
    assert result.usage.cpu_seconds > 0
    assert result.usage.wall_seconds > 0
    assert result.usage.max_rss_bytes > 1_000_000


def test_peak_rss_is_read_afresh_after_each_call(session: NativeSession) -> None:
    small = run(session, "x = 1").usage.max_rss_bytes
    grown = run(session, "block = bytearray(64 << 20); block[::4096] = b'x' * (16 << 10)")
    assert grown.usage.max_rss_bytes >= small + (60 << 20)


def test_sessions_leave_no_host_descriptors_behind(
    backend: NativeBackend, blobs: BlobStore
) -> None:
    backend.open(SessionSpec(limits=Limits(), blobs=blobs)).close()  # the template is up
    before = set(_descriptors_beyond(set(), backend))
    for _ in range(3):
        opened = backend.open(SessionSpec(limits=Limits(), blobs=blobs))
        run(opened, "print(1)")
        opened.reset()
        run(opened, "import ctypes; ctypes.string_at(0)")  # the worker dies; the next replaces it
        run(opened, "x = 1")
        opened.close()
    # Sessions spawned ahead for later opens hold the backend's ends of their channels, and
    # other threads of this process (watchdogs reading /proc) hold descriptors for a moment:
    # a leak is a descriptor that stays.
    deadline = time.monotonic() + 30
    leaked = _descriptors_beyond(before, backend)
    while leaked and time.monotonic() < deadline:
        time.sleep(0.05)
        leaked = _descriptors_beyond(before, backend)
    assert not leaked


def _descriptors_beyond(before: set[str], backend: NativeBackend) -> dict[str, str]:
    """This process's descriptors not in ``before`` nor held for a session spawned ahead, each
    with what it points at."""
    ahead = {
        str(fd)
        for _template, _workdir, _disk, spawned in list(backend._supply._spawned_ahead._ready)
        for fd in (spawned.channel.fileno(), spawned.stdout, spawned.stderr)
    }
    beyond = {}
    for fd in set(os.listdir("/proc/self/fd")) - before - ahead:
        try:
            beyond[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed while we looked
    return beyond


class _Calculator:
    """A tiny gateway: one tool, ``add``, that records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[JSONValue] = []

    def describe(self) -> tuple[ToolDescriptor, ...]:
        return (ToolDescriptor(name="add", description="add numbers"),)

    def invoke(self, name: str, arguments: JSONValue) -> ToolReply:
        self.calls.append(arguments)
        assert isinstance(arguments, dict)
        args, kwargs = arguments["args"], arguments["kwargs"]
        assert isinstance(args, list) and isinstance(kwargs, dict)
        if any(not isinstance(a, int) for a in [*args, *kwargs.values()]):
            return ToolReply(ok=False, error="add takes integers")
        value = sum(a for a in args if isinstance(a, int)) + sum(
            v for v in kwargs.values() if isinstance(v, int)
        )
        event = ToolCalled(
            tool=name, capability_id="cap-1", arguments_sha256="a", result_sha256="r"
        )
        return ToolReply(ok=True, value=value, event=event)


def test_tools_are_called_in_the_host_through_proxies(
    backend: NativeBackend, blobs: BlobStore, tmp_path: Path
) -> None:
    gateway = _Calculator()
    with backend.open(
        SessionSpec(workdir=tmp_path, limits=Limits(), blobs=blobs, tools=gateway)
    ) as session:
        result = run(
            session,
            "print(add(1, 2, extra=3))\n"
            "try:\n    add('x')\nexcept Exception as e:\n    print(type(e).__name__, e)",
        )
        assert out(session, result) == "6\nToolError add takes integers\n"
        assert result.usage.tool_calls == 2
        assert [e.kind for e in result.events] == ["tool_called"]
        assert gateway.calls[0] == {"args": [1, 2], "kwargs": {"extra": 3}}
        # Tools survive a reset; names the gateway did not grant do not exist.
        session.reset()
        assert out(session, run(session, "add(40, 2)")) == "42\n"
        assert run(session, "subtract(1, 2)").message.startswith("NameError")


def test_required_layers_are_checked(
    backend: NativeBackend, blobs: BlobStore, tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError):
        backend.open(
            SessionSpec(
                workdir=tmp_path, limits=Limits(), blobs=blobs, require=frozenset({"magic"})
            )
        )
    # Every layer this host can give, the size-bounded workdir included, for a session with a
    # workdir of its own.
    here = frozenset(layer.value for layer, status in backend.supported.items() if status.active)
    with backend.open(SessionSpec(limits=Limits(), blobs=blobs, require=here)) as session:
        assert all(session.layers[Layer(name)].active for name in here), session.layers
    # A workdir the caller gives is used in place: a policy that needs the disk layer refuses it.
    with pytest.raises(BackendUnavailable, match="disk"):  # (on every host: root or not)
        backend.open(
            SessionSpec(workdir=tmp_path, limits=Limits(), blobs=blobs, require=frozenset({"disk"}))
        )


def test_a_layer_that_cannot_apply_makes_open_fail_closed(blobs: BlobStore, tmp_path: Path) -> None:
    # An impossible rlimit fails the rlimits layer, which is always required.
    broken = NativeBackend()
    try:
        with pytest.raises(BackendUnavailable, match="rlimits"):
            broken.open(
                SessionSpec(
                    workdir=tmp_path,
                    limits=Limits(max_open_files=-5),
                    blobs=blobs,
                )
            )
    finally:
        broken.close()


def test_closed_sessions_refuse_to_run(backend: NativeBackend, blobs: BlobStore) -> None:
    session = backend.open(SessionSpec(limits=Limits(), blobs=blobs))
    workdir = session.workdir
    session.close()
    session.close()
    assert not workdir.exists()  # a workdir the session made is removed with it
    with pytest.raises(BackendError):
        run(session, "1")


def test_sessions_from_many_threads_are_isolated(backend: NativeBackend, blobs: BlobStore) -> None:
    results: dict[int, str] = {}

    def work(n: int) -> None:
        with backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as session:
            run(session, f"value = {n}")
            results[n] = out(session, run(session, "value * 10"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: f"{n * 10}\n" for n in range(8)}


def test_the_host_never_imports_the_worker() -> None:
    code = (
        "import sys, safeexec.backends.native\n"
        "import json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('safeexec.sandbox.'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    names = json.loads(loaded.stdout)
    assert "safeexec.sandbox.worker" not in names
    assert "safeexec.sandbox.zygote" not in names


def test_doctor_proves_every_layer_on_this_machine(backend: NativeBackend) -> None:
    report = diagnose(backend=backend)
    failing = [c for c in report.checks if c.supported and not (c.active and c.proven)]
    assert report.ok and not failing, failing


def test_the_doctor_command_prints_a_json_report() -> None:
    from typer.testing import CliRunner

    from safeexec.cli.app import app

    outcome = CliRunner().invoke(app, ["doctor", "--json"])
    report = json.loads(outcome.stdout)
    assert outcome.exit_code == report["exit_status"] in (0, 1, 2)
    assert report["ok"] is (report["exit_status"] == 0)
    assert report["rung"] in ("full", "container", "unprivileged", "minimal", None)
    assert {row["layer"] for row in report["layers"]} == {layer.value for layer in Layer}
    assert all(row["stops"] and row["how_to_get"] for row in report["layers"])


def _cli_run(cwd: Path, *files: str, options: tuple[str, ...] = ()) -> list[dict[str, object]]:
    command = [sys.executable, "-c", "from safeexec.cli.app import main; main()"]
    done = subprocess.run(
        [*command, "run", "--mode", "native", "--json", *options, *files],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_cli_run_keeps_state_from_file_to_file_and_reports_artifacts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 21\nwith open('made.txt', 'w') as f:\n    f.write('hi')\n")
    (tmp_path / "b.py").write_text("print(x * 2)\n")
    first, second = _cli_run(tmp_path, "a.py", "b.py")
    for outcome in (first, second):
        assert outcome["result"]["status"] == "ok"  # type: ignore[index]
    assert [a["name"] for a in first["result"]["artifacts"]] == ["made.txt"]  # type: ignore[index]
    assert "42" in second["observation"]["text"]  # type: ignore[index]


def test_a_matplotlib_figure_becomes_a_png_artifact_through_the_cli(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional 'data' extra is not installed")
    (tmp_path / "plot.py").write_text(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title('squares')\n"
    )
    (outcome,) = _cli_run(tmp_path, "plot.py", options=("--policy", "data-analysis"))
    artifacts = outcome["result"]["artifacts"]  # type: ignore[index]
    assert outcome["result"]["status"] == "ok", outcome["observation"]  # type: ignore[index]
    assert [(a["name"], a["media_type"]) for a in artifacts] == [
        ("figures/cell-1-figure-1.png", "image/png")
    ]


def test_a_data_analysis_script_runs_and_saves_a_chart(
    backend: NativeBackend, blobs: BlobStore, tmp_path: Path
) -> None:
    for module in ("numpy", "pandas", "matplotlib"):
        pytest.importorskip(module, reason="the optional 'data' extra is not installed")
    code = """
import numpy as np
import pandas as pd
import matplotlib.pyplot as plt
rng = np.random.default_rng(0)
frame = pd.DataFrame({"group": rng.integers(0, 3, 300), "value": rng.normal(size=300)})
summary = frame.groupby("group")["value"].agg(["count", "mean"])
summary.to_csv("summary.csv")
summary["mean"].plot(kind="bar")
plt.savefig("means.png")
print(int(summary["count"].sum()))
"""
    with backend.open(SessionSpec(workdir=tmp_path, limits=Limits(), blobs=blobs)) as session:
        result = run(session, code, wall_seconds=120.0, cpu_seconds=120.0)
        assert result.status is ExecStatus.OK, blobs.get(result.stderr)[-3000:]
        assert out(session, result) == "300\n"
        names = {a.name: a for a in result.artifacts}
        assert {"summary.csv", "means.png"} <= set(names)
        assert blobs.get(names["means.png"].blob).startswith(b"\x89PNG")


def test_without_a_pid_namespace_the_host_still_kills_the_whole_tree(
    backend: NativeBackend, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pretend the kernel gave no pid namespace: the host must fall back to walking the tree.
    monkeypatch.setattr(native.native_session, "is_pid_one_of_own_namespace", lambda pid: False)
    session = backend.open(SessionSpec(limits=Limits(), blobs=blobs))
    daemon = (
        "import os, signal, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        time.sleep(3600)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    assert run(session, daemon).status is ExecStatus.OK
    pids = session.process_ids()
    assert len(pids) == 2  # the worker and the re-parented daemon
    timed_out = run(session, "while True: pass", wall_seconds=0.5)
    assert timed_out.status is ExecStatus.TIMEOUT
    session.close()
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split(") ")[1][:1]
        )


def test_directories_made_by_an_upload_are_writable_by_the_code(session: NativeSession) -> None:
    session.upload("nested/deeper/input.txt", b"in")
    result = run(session, "open('nested/deeper/output.txt', 'w').write('out')")
    assert result.status is ExecStatus.OK, session.blobs.get(result.stderr)
    assert session.download("nested/deeper/output.txt") == b"out"


def test_sessions_of_different_backends_never_share_a_uid(
    backend: NativeBackend, blobs: BlobStore
) -> None:
    other = NativeBackend(pool_size=0)
    try:
        with (
            backend.open(SessionSpec(limits=Limits(), blobs=blobs)) as one,
            other.open(SessionSpec(limits=Limits(), blobs=blobs)) as two,
        ):
            uids = {out(s, run(s, "import os; os.getuid()")) for s in (one, two)}
    finally:
        other.close()
    assert len(uids) == (2 if os.geteuid() == 0 else 1)


def test_a_worker_that_dies_between_calls_is_replaced_before_the_next(
    session: NativeSession,
) -> None:
    run(session, "x = 1")
    old = session.pid
    assert old is not None
    pidfd = os.pidfd_open(old)
    os.kill(old, 9)  # as the kernel's OOM killer would
    select.select([pidfd], [], [], 10)
    os.close(pidfd)
    result = run(session, "print('fresh')")
    assert result.status is ExecStatus.OK
    assert result.state_lost and "died between calls" in result.message
    assert out(session, result) == "fresh\n"


def test_a_closed_backend_starts_again_on_the_next_open(blobs: BlobStore) -> None:
    reused = NativeBackend(pool_size=0)
    try:
        with reused.open(SessionSpec(limits=Limits(), blobs=blobs)) as first:
            assert run(first, "1").status is ExecStatus.OK
        reused.close()
        with reused.open(SessionSpec(limits=Limits(), blobs=blobs)) as second:
            assert run(second, "2").status is ExecStatus.OK
            stats = reused.statistics()
            assert stats.open_sessions == 1 and stats.pool_size == 0
            assert stats.template_pid is not None and stats.template_pid > 0
        reused.close()
        assert reused.statistics().template_pid is None  # a fresh snapshot after the close
        assert stats.template_pid is not None  # the earlier one stays as it was
    finally:
        reused.close()


def test_only_the_environment_the_caller_passes_reaches_the_code(
    backend: NativeBackend, blobs: BlobStore
) -> None:
    os.environ["SAFEEXEC_HOST_ONLY"] = "host secret"
    try:
        with backend.open(
            SessionSpec(limits=Limits(), blobs=blobs, env={"PASSED": "yes"})
        ) as session:
            listing = "import json, os; print(json.dumps(sorted(os.environ)))"
            seen = out(session, run(session, listing))
    finally:
        del os.environ["SAFEEXEC_HOST_ONLY"]
    names = json.loads(seen)
    assert "PASSED" in names and "SAFEEXEC_HOST_ONLY" not in names
    # Nor what the template process runs with (it forks every session).
    assert "OPENBLAS_NUM_THREADS" not in names


def test_the_environment_is_exactly_the_base_one_and_the_callers(
    backend: NativeBackend, blobs: BlobStore
) -> None:
    # A pool member sets the base environment ahead; the caller's variables override it.
    env = {"LANG": "en_US.UTF-8", "EXTRA": "1"}
    with backend.open(SessionSpec(limits=Limits(), blobs=blobs, env=env)) as session:
        seen = json.loads(
            out(session, run(session, "import json, os; print(json.dumps(dict(os.environ)))"))
        )
    home = seen["HOME"]
    assert seen == {**base_environment(home), **env}
    assert seen["LANG"] == "en_US.UTF-8" and seen["TMPDIR"] == f"{home}/.tmp"
