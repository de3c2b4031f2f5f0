"""Every usage and configuration error of every ``safeexec`` command, and one command line for
each other exit status a command documents, as data.

Each :class:`ErrorPath` is one command line that must fail with one line on stderr and a known
exit status; each of :data:`OUTCOME_PATHS` one that ends with another documented status. The
tests run them as a user would (the console script, in a fresh process), check the contract on
each run (:func:`contract_breaches`), hold every status to the one the command's help states for
that meaning, and hold the table to the app: every command the app has is here
(``tests/cli/test_contract.py``, ``tests/integration/test_cli_contract.py``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer.main

from safeexec import Session
from safeexec.cli.app import app

__all__ = [
    "ERROR_PATHS",
    "OUTCOME_PATHS",
    "ErrorPath",
    "Run",
    "command_of",
    "contract_breaches",
    "documented_statuses",
    "leaf_commands",
    "prepare",
    "run_path",
]

SAFEEXEC = Path(sys.executable).with_name("safeexec")


@dataclass(frozen=True, slots=True)
class ErrorPath:
    """One failing command line: ``argv`` after ``safeexec`` (``{tmp}`` is the prepared directory),
    what it reads on stdin, the exit status and a fragment the one line must hold (for an
    outcome, a fragment of stdout); ``means`` is the words the command's help gives that status."""

    id: str
    argv: tuple[str, ...]
    status: int
    says: str
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)
    means: str = "usage"


def prepare(tmp: Path) -> None:
    """The files the error paths point at: a reply, a not-UTF-8 file, a bad pack, a plain file
    where a directory is wanted, a suite and tools files that fail."""
    (tmp / "reply.md").write_text("```python\nprint(1)\n```\n")
    (tmp / "raises.md").write_text("```python\nraise ValueError('no')\n```\n")
    (tmp / "denied.md").write_text("```python\nimport subprocess\n```\n")
    (tmp / "sleeps.md").write_text("```python\nimport time\ntime.sleep(30)\n```\n")
    (tmp / "refused.dsl").write_text("x = undefined_tool(1)\n")
    (tmp / "binary.py").write_bytes(b"\xff\xfe\x00print(1)\n")
    (tmp / "bad.toml").write_text("this is = = not toml\n")
    (tmp / "plain").write_text("a file, not a directory\n")
    (tmp / "program.dsl").write_text("x = 1\n")
    (tmp / "broken_tools.py").write_text("def (:\n")
    (tmp / "raising_tools.py").write_text("raise RuntimeError('tools file fails')\n")
    (tmp / "tokens.toml").write_text("[tokens.a]\nsha256 = 'not a digest'\n")
    (tmp / "suite").mkdir(exist_ok=True)
    (tmp / "state").mkdir(exist_ok=True, mode=0o700)
    with Session(policy="default", mode="restricted", state_dir=tmp / "logged") as session:
        session.run("```python\nprint(1)\n```")
    shutil.copytree(tmp / "logged", tmp / "tampered")
    log = tmp / "tampered" / "audit.jsonl"
    log.write_text(log.read_text().replace('"default"', '"strict"', 1))  # one field rewritten


_USAGE, _CONFIG = 2, 2
_TOKEN = {"SAFEEXEC_SERVICE_TOKENS": "ci=0123456789abcdef0123"}
ERROR_PATHS: tuple[ErrorPath, ...] = (
    # The root group.
    ErrorPath("root-unknown-command", ("no-such-command",), _USAGE, "no-such-command"),
    ErrorPath("root-unknown-option", ("--bogus",), _USAGE, "--bogus"),
    ErrorPath("version-extra-argument", ("version", "extra"), _USAGE, "extra"),
    # run
    ErrorPath("run-missing-file", ("run", "{tmp}/missing.md"), _USAGE, "no such file"),
    ErrorPath("run-directory", ("run", "{tmp}"), _USAGE, "is a directory"),
    ErrorPath("run-not-utf8", ("run", "{tmp}/binary.py"), _USAGE, "not UTF-8"),
    ErrorPath("run-not-utf8-stdin", ("run", "-"), _USAGE, "not UTF-8", stdin=b"\xff\xfe"),
    ErrorPath(
        "run-unknown-policy",
        ("run", "--policy", "defualt", "{tmp}/reply.md"),
        _CONFIG,
        "did you mean 'default'",
    ),
    ErrorPath(
        "run-malformed-policy", ("run", "--policy", "{tmp}/bad.toml", "{tmp}/reply.md"), 2, "bad"
    ),
    ErrorPath("run-bad-memory", ("run", "--memory", "12XB", "{tmp}/reply.md"), _USAGE, "12XB"),
    ErrorPath("run-bad-mode", ("run", "--mode", "bogus", "{tmp}/reply.md"), _USAGE, "bogus"),
    ErrorPath("run-bad-timeout", ("run", "--timeout", "soon", "{tmp}/reply.md"), _USAGE, "soon"),
    ErrorPath("run-unknown-option", ("run", "--bogus"), _USAGE, "--bogus"),
    ErrorPath(
        "run-missing-workdir",
        ("run", "--workdir", "{tmp}/nowhere", "{tmp}/reply.md"),
        _USAGE,
        "--create-workdir",
    ),
    ErrorPath(
        "run-workdir-is-a-file", ("run", "--workdir", "{tmp}/plain", "{tmp}/reply.md"), 2, "plain"
    ),
    ErrorPath(
        "run-state-dir-is-a-file",
        ("run", "--state-dir", "{tmp}/plain", "{tmp}/reply.md"),
        _CONFIG,
        "Not a directory",
    ),
    ErrorPath(
        "run-state-dir-in-workdir",
        ("run", "--workdir", "{tmp}", "--state-dir", "{tmp}/state", "{tmp}/reply.md"),
        _CONFIG,
        "overlaps",
    ),
    ErrorPath(
        "run-missing-upload",
        ("run", "--upload", "{tmp}/missing.csv", "{tmp}/reply.md"),
        _USAGE,
        "missing.csv",
    ),
    ErrorPath(
        "run-missing-download",
        ("run", "--download", "nothing.csv:{tmp}/out.csv", "{tmp}/reply.md"),
        _USAGE,
        "nothing.csv",
    ),
    # check
    ErrorPath("check-bad-format", ("check", "--format", "xml", "{tmp}/reply.md"), _USAGE, "xml"),
    ErrorPath("check-unknown-policy", ("check", "--policy", "defualt", "-"), _CONFIG, "defualt"),
    ErrorPath("check-missing-file", ("check", "{tmp}/missing.py"), _USAGE, "no such file"),
    ErrorPath("check-directory", ("check", "{tmp}"), _USAGE, "is a directory"),
    ErrorPath("check-not-utf8", ("check", "{tmp}/binary.py"), _USAGE, "not UTF-8"),
    ErrorPath(
        "check-suggest-missing-file",
        ("check", "--suggest-policy", "{tmp}/missing.py"),
        _USAGE,
        "no such file",
    ),
    # explain
    ErrorPath("explain-unknown-rule", ("explain", "SX999"), _USAGE, "SX999"),
    ErrorPath("explain-unknown-policy", ("explain", "--policy", "defualt", "SX201"), 2, "defualt"),
    ErrorPath("explain-no-rule", ("explain",), _USAGE, "rule_id"),
    # doctor
    ErrorPath("doctor-unknown-policy", ("doctor", "--policy", "defualt"), _CONFIG, "defualt"),
    ErrorPath("doctor-malformed-policy", ("doctor", "--policy", "{tmp}/bad.toml"), 2, "bad"),
    # policy
    ErrorPath("policy-test-unknown-pack", ("policy", "test", "defualt"), _CONFIG, "defualt"),
    ErrorPath("policy-lint-unknown-pack", ("policy", "lint", "defualt"), _CONFIG, "defualt"),
    ErrorPath("policy-lint-malformed", ("policy", "lint", "{tmp}/bad.toml"), _CONFIG, "bad"),
    ErrorPath("policy-docs-no-out", ("policy", "docs"), _USAGE, "--out"),
    ErrorPath(
        "policy-docs-unknown-policy",
        ("policy", "docs", "--out", "{tmp}/d", "--policy", "x"),
        2,
        "'x'",
    ),
    ErrorPath("policy-docs-out-is-a-file", ("policy", "docs", "--out", "{tmp}/plain"), 2, "plain"),
    ErrorPath("policy-unknown-subcommand", ("policy", "fmt"), _USAGE, "fmt"),
    # log
    # (a state dir that is a file is unreadable: 1, as a tampered log)
    ErrorPath(
        "log-show-state-dir-is-a-file",
        ("log", "show", "{tmp}/plain"),
        1,
        "plain",
        means="unreadable",
    ),
    ErrorPath("log-show-no-log", ("log", "show", "{tmp}/state"), _USAGE, "no audit log"),
    ErrorPath("log-show-bad-lines", ("log", "show", "{tmp}/logged", "--lines", "1"), _USAGE, "1"),
    ErrorPath(
        "log-show-unknown-session",
        ("log", "show", "{tmp}/logged", "--session", "s-nobody"),
        _USAGE,
        "s-nobody",
    ),
    ErrorPath(
        "log-verify-state-dir-is-a-file",
        ("log", "verify", "{tmp}/plain"),
        1,
        "plain",
        means="unreadable",
    ),
    ErrorPath("log-replay-no-log", ("log", "replay", "{tmp}/state"), _USAGE, "no audit log"),
    ErrorPath(
        "log-replay-unknown-session",
        ("log", "replay", "{tmp}/logged", "--session", "s-nobody"),
        _USAGE,
        "s-nobody",
    ),
    ErrorPath(
        "log-replay-unknown-policy",
        ("log", "replay", "{tmp}/logged", "--policy", "defualt"),
        _USAGE,
        "defualt",
    ),
    # dsl
    ErrorPath("dsl-check-missing-file", ("dsl", "check", "{tmp}/missing.dsl"), _USAGE, "missing"),
    ErrorPath(
        "dsl-check-unknown-policy",
        ("dsl", "check", "{tmp}/program.dsl", "--policy", "defualt"),
        _CONFIG,
        "defualt",
    ),
    ErrorPath(
        "dsl-check-missing-tools",
        ("dsl", "check", "{tmp}/program.dsl", "--tools", "{tmp}/missing.py"),
        _USAGE,
        "missing.py",
    ),
    ErrorPath(
        "dsl-plan-broken-tools",
        ("dsl", "plan", "{tmp}/program.dsl", "--tools", "{tmp}/broken_tools.py"),
        _USAGE,
        "broken_tools.py",
    ),
    ErrorPath(
        "dsl-plan-raising-tools",
        ("dsl", "plan", "{tmp}/program.dsl", "--tools", "{tmp}/raising_tools.py"),
        _USAGE,
        "tools file fails",
    ),
    ErrorPath("dsl-plan-directory", ("dsl", "plan", "{tmp}"), _USAGE, "directory"),
    # agent
    ErrorPath("agent-run-missing-suite", ("agent", "run", "{tmp}/missing"), _USAGE, "missing"),
    ErrorPath("agent-run-empty-suite", ("agent", "run", "{tmp}/suite"), _CONFIG, "suite"),
    ErrorPath(
        "agent-run-unknown-agent",
        ("agent", "run", "examples/agent_suite", "--agent", "bogus", "--state-dir", "{tmp}/s"),
        _CONFIG,
        "bogus",
    ),
    ErrorPath(
        "agent-run-unknown-task",
        ("agent", "run", "examples/agent_suite", "--tasks", "t-none", "--state-dir", "{tmp}/s"),
        _CONFIG,
        "t-none",
    ),
    ErrorPath(
        "agent-run-unknown-policy",
        ("agent", "run", "examples/agent_suite", "--policy", "defualt", "--state-dir", "{tmp}/s"),
        _CONFIG,
        "defualt",
    ),
    ErrorPath("agent-run-bad-format", ("agent", "run", "{tmp}/suite", "--format", "xml"), 2, "xml"),
    # mcp
    ErrorPath("mcp-bad-transport", ("mcp", "--transport", "carrier-pigeon"), _USAGE, "pigeon"),
    ErrorPath("mcp-unknown-policy", ("mcp", "--policy", "defualt"), _CONFIG, "defualt"),
    ErrorPath("mcp-bad-memory", ("mcp", "--memory", "lots"), _USAGE, "lots"),
    ErrorPath(
        "mcp-http-missing-tokens",
        ("mcp", "--transport", "http", "--tokens", "{tmp}/missing.toml"),
        _CONFIG,
        "missing.toml",
    ),
    ErrorPath("mcp-bad-host", ("mcp", "--host", "0.0.0.0"), _USAGE, "0.0.0.0"),
    # serve
    ErrorPath("serve-bad-max-body", ("serve", "--max-body", "huge"), _USAGE, "huge", env=_TOKEN),
    ErrorPath("serve-bad-token-id", ("serve", "--new-token", "--token-id", "a b"), _USAGE, "a b"),
    ErrorPath(
        "serve-unknown-policy", ("serve", "--policy", "defualt"), _CONFIG, "defualt", env=_TOKEN
    ),
    ErrorPath("serve-no-tokens", ("serve",), _CONFIG, "no tokens"),
    ErrorPath("serve-missing-tokens", ("serve", "--tokens", "{tmp}/missing.toml"), 2, "missing"),
    ErrorPath("serve-bad-tokens", ("serve", "--tokens", "{tmp}/tokens.toml"), _CONFIG, "tokens"),
    ErrorPath(
        "serve-bad-tokens-env",
        ("serve",),
        _CONFIG,
        "SAFEEXEC_SERVICE_TOKENS",
        env={"SAFEEXEC_SERVICE_TOKENS": "no-equals-sign"},
    ),
    ErrorPath("serve-bad-port", ("serve", "--port", "http"), _USAGE, "http"),
)


_AGENT = ("agent", "run", "examples/agent_suite", "--tasks", "shop-price")
OUTCOME_PATHS: tuple[ErrorPath, ...] = (
    ErrorPath("version", ("version",), 0, ".", means="printed"),
    ErrorPath("run-ok", ("run", "{tmp}/reply.md"), 0, "1", means="ran OK"),
    ErrorPath("run-raised", ("run", "{tmp}/raises.md"), 1, "ValueError", means="raised"),
    ErrorPath("run-denied", ("run", "{tmp}/denied.md"), 3, "SX201", means="denied"),
    ErrorPath(
        "run-timeout", ("run", "--timeout", "1", "{tmp}/sleeps.md"), 4, "timeout", means="timeout"
    ),
    ErrorPath("check-allowed", ("check", "{tmp}/reply.md"), 0, "allow", means="allowed"),
    ErrorPath("check-denied", ("check", "{tmp}/denied.md"), 3, "SX201", means="denied"),
    ErrorPath("explain", ("explain", "SX201"), 0, "SX201", means="printed"),
    ErrorPath("policy-lint", ("policy", "lint", "default"), 0, "0 issue", means="clean"),
    ErrorPath(
        "policy-docs", ("policy", "docs", "--out", "{tmp}/pages"), 0, "wrote", means="written"
    ),
    ErrorPath("log-verify", ("log", "verify", "{tmp}/logged"), 0, "intact", means="intact"),
    ErrorPath("log-verify-tampered", ("log", "verify", "{tmp}/tampered"), 1, "", means="tampered"),
    ErrorPath("log-show", ("log", "show", "{tmp}/logged"), 0, "1 steps", means="shown"),
    ErrorPath("log-replay", ("log", "replay", "{tmp}/logged"), 0, "0 differ", means="the same"),
    ErrorPath(
        "dsl-check-allowed", ("dsl", "check", "{tmp}/program.dsl"), 0, "allow", means="allowed"
    ),
    ErrorPath(
        "dsl-check-refused", ("dsl", "check", "{tmp}/refused.dsl"), 1, "SX701", means="refused"
    ),
    ErrorPath(
        "agent-run-succeeded",
        (*_AGENT, "--state-dir", "{tmp}/agent-state"),
        0,
        "1/1 succeeded",
        means="every task succeeded",
    ),
    ErrorPath("serve-new-token", ("serve", "--new-token"), 0, "sha256", means="printed"),
)


@dataclass(frozen=True, slots=True)
class Run:
    """What one run of an error path did."""

    status: int
    stdout: str
    stderr: str


def run_path(path: ErrorPath, tmp: Path, *, repo: Path) -> Run:
    """Run ``path`` as a user would: the console script, from the repository, state under
    ``tmp`` (never the user's), stdin closed after ``path.stdin``."""
    argv = [arg.replace("{tmp}", str(tmp)) for arg in path.argv]
    env = {name: value for name, value in os.environ.items() if not name.startswith("SAFEEXEC_")}
    env.update(XDG_STATE_HOME=str(tmp / "xdg-state"), COLUMNS="100", **path.env)
    done = subprocess.run(
        [str(SAFEEXEC), *argv],
        input=path.stdin,
        capture_output=True,
        cwd=repo,
        env=env,
        timeout=120,
        check=False,
    )
    return Run(
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


# What a Python repr looks like in a message meant for people.
_REPRS = (
    re.compile(r"\b\w+=['\"]"),  # name='value' (an f-string's {name!r} / {name=})
    re.compile(r"\b(?:Posix|Windows|Pure\w*)?Path\("),
    re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>"),
    re.compile(r"\{'[^']*': "),  # a dict
    re.compile(r"\b[A-Z]\w*\(\w+="),  # a dataclass
)


def contract_breaches(path: ErrorPath, run: Run) -> list[str]:
    """What ``run`` of ``path`` broke of the CLI contract (empty: nothing)."""
    breaches = []
    lines = run.stderr.splitlines()
    if "Traceback" in run.stderr or "Exception ignored" in run.stderr:
        breaches.append("a traceback on stderr")
    if len(lines) != 1:
        breaches.append(f"{len(lines)} lines on stderr, not one")
    if run.status != path.status:
        breaches.append(f"exit status {run.status}, not {path.status}")
    line = lines[0] if lines else ""
    if not line.startswith("safeexec: "):
        breaches.append("the line does not start with 'safeexec: '")
    if path.says not in line:
        breaches.append(f"the line does not say {path.says!r}")
    breaches.extend(
        f"a Python repr ({pattern.pattern})" for pattern in _REPRS if pattern.search(line)
    )
    if any(c in run.stderr for c in "╭│╰─"):
        breaches.append("a rich box on stderr")
    return breaches


def leaf_commands() -> dict[tuple[str, ...], str]:
    """Every command a user can run (``("log", "show")``, ...) and its help text, from the app."""
    root = typer.main.get_command(app)
    found: dict[tuple[str, ...], str] = {}

    def walk(command: Any, path: tuple[str, ...], parent: Any) -> None:
        context = command.make_context(
            " ".join(("safeexec", *path)), [], parent=parent, resilient_parsing=True
        )
        names = command.list_commands(context) if hasattr(command, "list_commands") else None
        if names is None:
            found[path] = command.get_help(context)
            return
        for name in names:
            walk(command.get_command(context, name), (*path, name), context)

    walk(root, (), None)
    return found


def command_of(path: ErrorPath, commands: Iterable[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The command ``path`` runs (the longest one its argv starts with); None: the root."""
    matching = [c for c in commands if path.argv[: len(c)] == c]
    return max(matching, key=len) if matching else None


_STATUS = re.compile(r"(?:^|;)\s*(\d+) ([^;]+)")


def documented_statuses(help_text: str) -> dict[int, str]:
    """The ``Exit status:`` paragraph of a command's help as {status: what it means}."""
    flat = " ".join(help_text.split())
    _, found, paragraph = flat.partition("Exit status: ")
    if not found:
        return {}
    paragraph = re.split(r" (?:Options|Arguments):", paragraph)[0].rstrip(".")
    return {int(m.group(1)): m.group(2).strip() for m in _STATUS.finditer(paragraph)}
