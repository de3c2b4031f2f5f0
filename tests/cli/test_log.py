"""``safeexec run --workdir .`` just works (the state lives elsewhere); ``safeexec log verify``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from safeexec.cli.app import app

RUN_MAIN = "from safeexec.cli.app import main; main()"


def _safeexec(*args: str, cwd: Path, state_home: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "safeexec"
    program = [str(script)] if script.exists() else [sys.executable, "-c", RUN_MAIN]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["XDG_STATE_HOME"] = str(state_home)
    return subprocess.run(
        [*program, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def test_run_with_workdir_dot_works_and_keeps_the_state_out_of_the_project(
    tmp_path: Path,
) -> None:
    project, state_home = tmp_path / "project", tmp_path / "state-home"
    project.mkdir()
    (project / "reply.md").write_text(
        "```python\nfrom pathlib import Path\nPath('out.txt').write_text('hi')\nprint(6 * 7)\n```\n"
    )
    done = _safeexec("run", "--workdir", ".", "reply.md", cwd=project, state_home=state_home)
    assert done.returncode == 0, done.stderr
    assert "42" in done.stdout
    assert (project / "out.txt").read_text() == "hi"  # the code ran in the project
    assert ".safeexec" not in os.listdir(project)
    assert (state_home / "safeexec" / "audit.jsonl").is_file()
    verified = _safeexec("log", "verify", cwd=project, state_home=state_home)
    assert verified.returncode == 0, verified.stderr
    assert "1 events, chain intact" in verified.stdout


def test_run_with_the_old_default_inside_the_workdir_is_a_clear_usage_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "reply.md").write_text("```python\nprint(1)\n```\n")
    done = _safeexec(
        "run", "--workdir", ".", "--state-dir", ".safeexec", "reply.md",
        cwd=tmp_path, state_home=tmp_path / "unused",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("safeexec: error: state dir '")
    assert "overlaps workdir '" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / ".safeexec").exists()


def test_log_verify_reports_a_rewritten_event_in_one_line_with_exit_1(tmp_path: Path) -> None:
    (tmp_path / "reply.md").write_text("```python\nimport subprocess\n```\n")
    runner = CliRunner()
    state = tmp_path / "state"
    reply = str(tmp_path / "reply.md")
    runner.invoke(app, ["run", "--mode", "restricted", "--state-dir", str(state), reply])
    ok = runner.invoke(app, ["log", "verify", str(state)])
    assert ok.exit_code == 0, ok.output
    log = state / "audit.jsonl"
    data = json.loads(log.read_bytes())
    assert data["verdict"] == "deny"
    data["verdict"], data["findings"] = "allow", []
    log.write_text(json.dumps(data) + "\n")
    tampered = runner.invoke(app, ["log", "verify", str(state)])
    assert tampered.exit_code == 1
    (line,) = tampered.output.strip().splitlines()
    assert line.startswith("safeexec: log verify: ") and "chain head" in line


def test_log_verify_of_a_missing_state_dir_fails(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["log", "verify", str(tmp_path / "nowhere")])
    assert done.exit_code == 1
    assert "cannot open the audit log directory" in done.output
