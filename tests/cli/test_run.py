"""``safeexec run``: one session over several replies, JSON outcomes, exit codes, clean errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from safeexec.audit.blobs import BlobStore
from safeexec.audit.log import AuditLog
from safeexec.backends.base import Backend
from safeexec.backends.fake import FakeBackend, FakeReply
from safeexec.backends.registry import SharedBackends, default_backend
from safeexec.cli.app import app
from safeexec.model.values import ExecRequest, ExecStatus, Usage
from safeexec.session import session as session_module

POLICY_TOML = """\
[policy]
id = "cli-test"

[backends]
allowed = ["fake", "native"]
default = "fake"
"""

RUN_MAIN = "from safeexec.cli.app import main; main()"
SYNTAX_ERROR = "Here you go:\n\n```python\nx = 1\nprint(x +)\n```\n"


def fenced(code: str) -> str:
    return f"```python\n{code}```\n"


def scripted(request: ExecRequest) -> FakeReply:
    """Answer by a marker in the code, so a test can ask for any status."""
    for status in ExecStatus:
        if f"# {status.value}" in request.code:
            exit_code = {ExecStatus.OK: 0, ExecStatus.ERROR: 1}.get(status)
            return FakeReply(status=status, exit_code=exit_code, stderr=f"{status.value}\n")
    return FakeReply(stdout=f"ran {request.action_id}\n", usage=Usage(cpu_seconds=0.1))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeBackend:
    backend = FakeBackend(scripted)

    def registry(name: str) -> Backend:
        return backend if name == "fake" else default_backend(name)

    monkeypatch.setattr(session_module, "shared_backends", SharedBackends(registry))
    return backend


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "policy.toml").write_text(POLICY_TOML)
    return tmp_path


def invoke(workspace: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    base = ["run", "--policy", str(workspace / "policy.toml"), "--state-dir", str(workspace / "st")]
    result = CliRunner().invoke(app, [*base, *args], input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def write(workspace: Path, name: str, text: str) -> str:
    path = workspace / name
    path.write_text(text)
    return str(path)


def test_a_syntax_error_is_sx001_with_position_and_caret_exit_3_and_audited(
    workspace: Path, fake: FakeBackend
) -> None:
    ran = write(workspace, "first.md", fenced("print('hello')\n"))
    bad = write(workspace, "reply.md", SYNTAX_ERROR)
    code, out, err = invoke(workspace, "--json", ran, bad)
    assert code == 3
    assert err == ""
    first, second = (json.loads(line) for line in out.splitlines())
    assert second["decision"]["verdict"] == "deny"
    (finding,) = second["decision"]["findings"]
    assert finding["rule"] == "SX001"
    assert finding["span"]["start_line"] == 2
    assert finding["span"]["start_column"] >= 1
    assert "^" in second["observation"]["text"]
    assert second["result"] is None
    assert len(fake.calls) == 1  # the syntax error never reached the backend

    events = AuditLog(workspace / "st" / "audit.jsonl").read()
    assert [e.to_json() for e in events] == [first["event"], second["event"]]
    assert events[1].findings[0].rule == "SX001"
    blobs = BlobStore(workspace / "st" / "blobs")
    assert events[0].stdout_ref is not None and events[0].stderr_ref is not None
    assert events[0].stdout_ref in blobs and events[0].stderr_ref in blobs
    assert blobs.get(events[0].stdout_ref).startswith(b"ran ")


def test_json_output_has_the_documented_fields(workspace: Path, fake: FakeBackend) -> None:
    code, out, _ = invoke(workspace, "--json", write(workspace, "r.md", fenced("x = 1\n")))
    assert code == 0
    (line,) = out.splitlines()
    outcome = json.loads(line)
    assert outcome["decision"]["verdict"] == "allow"
    assert outcome["decision"]["findings"] == []
    assert outcome["result"]["status"] == "ok"
    assert outcome["result"]["exit_code"] == 0
    assert isinstance(outcome["observation"]["text"], str)
    assert outcome["observation"]["truncated"] is False
    assert outcome["event"]["verdict"] == "allow"
    assert outcome["event"]["policy_id"] == "cli-test"


def test_several_files_run_in_one_session_in_order(workspace: Path, fake: FakeBackend) -> None:
    files = [write(workspace, f"{n}.md", fenced(f"step_{n} = {n}\n")) for n in range(3)]
    code, out, _ = invoke(workspace, "--json", *files)
    assert code == 0
    assert len(fake.sessions) == 1
    assert [r.code for r in fake.sessions[0].requests] == [f"step_{n} = {n}\n" for n in range(3)]
    ids = [json.loads(line)["action"]["action_id"] for line in out.splitlines()]
    assert ids == [r.action_id for r in fake.calls]
    session_ids = {json.loads(line)["event"]["session_id"] for line in out.splitlines()}
    assert len(session_ids) == 1


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (["x = 1\n"], 0),
        (["# error\n"], 1),
        (["# timeout\n"], 4),
        (["# limit_exceeded\n"], 4),
        (["# killed\n"], 4),
        (["# denied_at_runtime\n"], 3),
        (["x = 1\n", "# error\n", "y = 2\n"], 1),
        (["# error\n", "def f(:\n"], 3),
        (["# timeout\n", "def f(:\n", "# error\n"], 4),
    ],
)
def test_the_exit_code_is_the_worst_outcome(
    workspace: Path, fake: FakeBackend, codes: list[str], expected: int
) -> None:
    files = [write(workspace, f"{n}.md", fenced(c)) for n, c in enumerate(codes)]
    assert invoke(workspace, *files)[0] == expected


def test_a_reply_without_code_is_denied_with_result_null(
    workspace: Path, fake: FakeBackend
) -> None:
    code, out, _ = invoke(workspace, "--json", write(workspace, "r.md", "No code today."))
    assert code == 3
    outcome = json.loads(out)
    assert outcome["result"] is None
    assert [f["rule"] for f in outcome["decision"]["findings"]] == ["SX006"]


def test_text_mode_prints_observations_with_a_header_per_file(
    workspace: Path, fake: FakeBackend
) -> None:
    one = write(workspace, "one.md", fenced("x = 1\n"))
    code, out, _ = invoke(workspace, one)
    assert code == 0
    assert out.startswith("ran a-") or "ran a-" in out
    assert "==>" not in out
    two = write(workspace, "two.md", SYNTAX_ERROR)
    code, out, _ = invoke(workspace, one, two)
    assert code == 3
    assert f"==> {one}: allow <==" in out
    assert f"==> {two}: deny <==" in out
    assert "SX001" in out


@pytest.mark.parametrize("args", [["-"], []])
def test_stdin_is_read_for_dash_or_no_files(
    workspace: Path, fake: FakeBackend, args: list[str]
) -> None:
    code, out, _ = invoke(workspace, "--json", *args, stdin=fenced("z = 3\n"))
    assert code == 0
    assert json.loads(out)["action"]["code"] == "z = 3\n"


def test_workdir_option_is_the_backends_workdir(workspace: Path, fake: FakeBackend) -> None:
    workdir = workspace / "wd"
    workdir.mkdir()
    invoke(workspace, "--workdir", str(workdir), write(workspace, "r.md", fenced("x = 1\n")))
    assert fake.sessions[0].opened.workdir == workdir


def test_a_missing_workdir_is_a_usage_error_unless_asked_to_create_it(
    workspace: Path, fake: FakeBackend
) -> None:
    workdir = workspace / "made" / "here"
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, err = invoke(workspace, "--workdir", str(workdir), reply)
    assert code == 2 and "does not exist" in err and "--create-workdir" in err
    assert not workdir.exists() and not fake.sessions  # refused before anything started
    code, _, err = invoke(workspace, "--workdir", str(workdir), "--create-workdir", reply)
    assert (code, err) == (0, "")
    assert workdir.is_dir() and fake.sessions[0].opened.workdir == workdir


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["missing.md"], "no such file: 'missing.md'"),
        (["--policy", "no-such-pack", "r.md"], "no policy pack named"),
        (["--policy", "bad.toml", "r.md"], "unknown top-level key 'limitz'"),
        (["latin1.md"], "not UTF-8"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_2(
    workspace: Path,
    fake: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(workspace)
    write(workspace, "r.md", fenced("x = 1\n"))
    write(workspace, "bad.toml", "[limitz]\ncpu_seconds = 1\n")
    (workspace / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    code, out, err = invoke(workspace, *extra)
    assert code == 2
    assert err.startswith("safeexec: error: ")
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err + out


def test_the_installed_command_runs_in_a_real_subprocess(tmp_path: Path) -> None:
    """End to end, nothing faked: the default policy, the native backend, a relative state dir."""
    (tmp_path / "first.md").write_text(fenced("total = sum(range(10))\nprint(total)\n"))
    (tmp_path / "reply.md").write_text(SYNTAX_ERROR)
    script = Path(sys.executable).parent / "safeexec"
    program = [str(script)] if script.exists() else [sys.executable, "-c", RUN_MAIN]
    command = [*program, "run", "--json", "--state-dir", "state", "first.md", "reply.md"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr == ""
    ran, denied = (json.loads(line) for line in done.stdout.splitlines())
    assert ran["event"]["policy_id"] == "default"
    assert ran["event"]["backend"] == "native"
    assert (ran["result"]["status"], ran["result"]["exit_code"]) == ("ok", 0)
    assert "45" in ran["observation"]["text"]
    (finding,) = denied["decision"]["findings"]
    assert finding["rule"] == "SX001"
    assert (finding["span"]["start_line"], finding["span"]["start_column"]) == (2, 10)
    assert "^" in denied["observation"]["text"]
    assert denied["result"] is None
    events = AuditLog(tmp_path / "state" / "audit.jsonl").read()
    assert [e.to_json() for e in events] == [ran["event"], denied["event"]]
    blobs = BlobStore(tmp_path / "state" / "blobs")
    assert blobs.get(ran["event"]["stdout_ref"]) == b"45\n"
    assert ran["event"]["stderr_ref"] in blobs


@pytest.mark.parametrize("mode", ["fake", "docker"])
def test_only_real_backends_are_offered_as_modes(workspace: Path, mode: str) -> None:
    code, _out, err = invoke(workspace, "--mode", mode, write(workspace, "r.md", fenced("x = 1\n")))
    assert code == 2
    assert "Invalid value for '--mode'" in err and f"'{mode}' is not one of" in err, err


def test_limit_flags_narrow_the_policy_and_are_audited(workspace: Path, fake: FakeBackend) -> None:
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, _ = invoke(workspace, "--timeout", "1.5", "--cpu", "0.5", "--memory", "256MiB", reply)
    assert code == 0
    limits = fake.calls[-1].limits
    assert (limits.wall_seconds, limits.cpu_seconds, limits.memory_bytes) == (1.5, 0.5, 256 << 20)
    (event,) = AuditLog(workspace / "st" / "audit.jsonl").read()
    assert event.limits == limits


def test_limit_flags_never_widen_the_policy(workspace: Path, fake: FakeBackend) -> None:
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, _ = invoke(workspace, "--timeout", "3600", "--memory", "1TiB", reply)
    assert code == 0
    limits = fake.calls[-1].limits
    assert (limits.wall_seconds, limits.memory_bytes) == (10.0, 1024 << 20)


def test_a_bad_memory_size_is_a_usage_error(workspace: Path, fake: FakeBackend) -> None:
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, out, err = invoke(workspace, "--memory", "lots", reply)
    assert (code, out) == (2, "")
    assert "size 'lots'" in err
    assert fake.calls == []


def test_an_interrupted_action_exits_4(workspace: Path, fake: FakeBackend) -> None:
    code, _, _ = invoke(workspace, write(workspace, "r.md", fenced("# interrupted\n")))
    assert code == 4


def test_upload_before_and_download_after_the_replies(
    workspace: Path, fake: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    source = write(workspace, "sales.csv", "region,amount\nnorth,3\n")
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, err = invoke(
        workspace,
        "--workdir",
        str(workspace / "wd"),
        "--create-workdir",
        "--upload",
        source,
        "--upload",
        f"{source}:data/copy.csv",
        "--download",
        "data/copy.csv:back.csv",
        "--download",
        "sales.csv",
        reply,
    )
    assert (code, err) == (0, "")
    assert (workspace / "wd" / "sales.csv").read_text() == "region,amount\nnorth,3\n"
    assert (workspace / "back.csv").read_text() == "region,amount\nnorth,3\n"


def test_downloading_a_missing_file_is_a_usage_error(workspace: Path, fake: FakeBackend) -> None:
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, err = invoke(workspace, "--download", "nope.csv:out.csv", reply)
    assert code == 2
    assert "name 'nope.csv'" in err


def test_a_workdir_naming_a_file_exits_2(workspace: Path, fake: FakeBackend) -> None:
    reply = write(workspace, "r.md", fenced("x = 1\n"))
    code, _, err = invoke(workspace, "--workdir", reply, reply)
    assert code == 2
    assert "is not a directory" in err
