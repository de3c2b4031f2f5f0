"""``safeexec run``: feed model replies (files or stdin) through one :class:`Session`, in order.

Exit codes: 0 every action ran OK, 1 the code raised, 2 usage or configuration error, 3 denied,
4 timeout / limit exceeded / killed. With several inputs the worst (highest) code wins.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import sys
import threading
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol, runtime_checkable

import typer

from safeexec._support.units import parse_bytes
from safeexec.cli.groups import one_shot, usage_error
from safeexec.errors import ConfigurationError, SafeExecError

if TYPE_CHECKING:
    from safeexec.backends.base import Backend
    from safeexec.backends.native.template import TemplateProcess
    from safeexec.model.values import ExecStatus, Outcome
    from safeexec.policy.schema import Policy


@runtime_checkable
class _Startable(Protocol):
    """A backend with a template that can boot ahead of its first session."""

    def start(self, process: TemplateProcess | None = None) -> None: ...


__all__ = ["Mode", "exit_code", "run"]

EXIT_OK = 0
EXIT_RAISED = 1
EXIT_DENIED = 3
EXIT_LIMIT = 4

# A run holds one session: its template forks the first session process ahead, not a pool.
_POOL_SIZE = 1


@functools.cache
def _status_exit() -> dict[ExecStatus, int]:
    from safeexec.model.values import ExecStatus

    return {
        ExecStatus.OK: EXIT_OK,
        ExecStatus.ERROR: EXIT_RAISED,
        ExecStatus.DENIED_AT_RUNTIME: EXIT_DENIED,
        ExecStatus.TIMEOUT: EXIT_LIMIT,
        ExecStatus.LIMIT_EXCEEDED: EXIT_LIMIT,
        ExecStatus.KILLED: EXIT_LIMIT,
        ExecStatus.INTERRUPTED: EXIT_LIMIT,
    }


class Mode(StrEnum):
    """The modes ``--mode`` offers: the real backends (the fake is for tests, not a mode)."""

    NATIVE = "native"
    RESTRICTED = "restricted"
    DSL = "dsl"


def exit_code(outcome: Outcome) -> int:
    """The process exit code one outcome stands for."""
    if outcome.result is None:
        return EXIT_DENIED
    return _status_exit()[outcome.result.status]


def run(
    files: Annotated[
        list[str] | None,
        typer.Argument(help="Files holding model replies, run in order; '-' or none reads stdin."),
    ] = None,
    mode: Annotated[
        Mode | None,
        typer.Option("--mode", help="Backend to run in (default: the policy's)."),
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", help="Policy pack name or path to a pack or .toml file.")
    ] = "default",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print one Outcome JSON object per action, per line.")
    ] = False,
    workdir: Annotated[
        Path | None,
        typer.Option(
            "--workdir",
            help="Working directory for the code, which must exist (default: a fresh temporary "
            "one, removed afterwards).",
        ),
    ] = None,
    create_workdir: Annotated[
        bool,
        typer.Option("--create-workdir", help="Make --workdir (and its parents) if it is missing."),
    ] = False,
    state_dir: Annotated[
        Path | None,
        typer.Option(
            "--state-dir",
            help="Where audit.jsonl and blobs/ live, apart from the workdir "
            "(default $XDG_STATE_HOME/safeexec, else ~/.local/state/safeexec).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Wall-clock limit per action; lowers the policy's, never raises it.",
        ),
    ] = None,
    cpu: Annotated[
        float | None,
        typer.Option(
            "--cpu",
            metavar="SECONDS",
            help="CPU-time limit per action; lowers the policy's, never raises it.",
        ),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option(
            "--memory",
            metavar="SIZE",
            help="Memory limit (e.g. 512MiB, 2GiB); lowers the policy's, never raises it.",
        ),
    ] = None,
    upload: Annotated[
        list[str] | None,
        typer.Option(
            "--upload",
            metavar="SRC[:DEST]",
            help="Copy a local file into the workdir (as DEST, default its name) before running.",
        ),
    ] = None,
    download: Annotated[
        list[str] | None,
        typer.Option(
            "--download",
            metavar="NAME[:DEST]",
            help="Copy a workdir file out (to DEST, default ./NAME's name) after running.",
        ),
    ] = None,
) -> None:
    """Run the code in model replies under a policy, in one session (state carries over).

    Exit status: 0 every action ran OK; 1 the code raised; 2 a usage or configuration error;
    3 denied; 4 timeout, limit exceeded or killed (with several files, the worst).
    """
    if workdir is not None and not workdir.exists() and not create_workdir:
        usage_error(f"--workdir {str(workdir)!r} does not exist; make it or add --create-workdir")
    with one_shot():
        warm: Backend | None = None
        # Started before the policy, the gate and the backend load (they load while it boots).
        early = _launch_template(mode)
        try:
            from safeexec.policy.loader import load_policy
            from safeexec.policy.narrow import narrow_limits

            replies = [(name, _read(name)) for name in (files or ["-"])]
            code = EXIT_OK
            chosen = None if mode is None else mode.value
            narrowed = narrow_limits(
                load_policy(policy),
                wall_seconds=timeout,
                cpu_seconds=cpu,
                memory_bytes=None if memory is None else parse_bytes(memory),
            )
            warm, early = _warm_backend(narrowed, chosen, early), None
            # Imported once the template is starting: the gate's parsers load while it boots.
            from safeexec.session.session import Session

            backends = None if warm is None else {chosen or narrowed.backends.default: warm}
            with Session(
                policy=narrowed,
                mode=chosen,
                workdir=workdir,
                state_dir=state_dir,
                backends=backends,
            ) as session:
                for spec in upload or []:
                    source, dest = _split_transfer(spec)
                    session.files.write(dest or Path(source).name, Path(source).read_bytes())
                for name, text in replies:
                    outcome = session.run(text)
                    code = max(code, exit_code(outcome))
                    if json_output:
                        typer.echo(json.dumps(outcome.to_json()))
                    else:
                        if len(replies) > 1:
                            typer.echo(f"==> {name}: {outcome.decision.verdict.value} <==")
                        typer.echo(outcome.observation.text)
                for spec in download or []:
                    name, dest = _split_transfer(spec)
                    Path(dest or Path(name).name).write_bytes(session.files.read(name))
        except SafeExecError as exc:
            usage_error(str(exc))
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise  # stdout closed (| head): the command ends quietly (groups.finish)
            usage_error(f"{exc.strerror or exc}: {exc.filename!s}" if exc.filename else str(exc))
        finally:
            if early is not None:
                early.close()
            if warm is not None:
                warm.close()
        raise typer.Exit(code)


def _launch_template(mode: Mode | None) -> TemplateProcess | None:
    """A native template process started ahead, for a run whose mode may use one (the
    policy's default is not known yet). It runs nothing until a backend takes it over
    (:func:`_warm_backend`), which confines every session as it would its own template's."""
    if mode not in (None, Mode.NATIVE, Mode.RESTRICTED):
        return None
    from safeexec.backends.native.template import TemplateProcess

    try:
        return TemplateProcess(python=sys.executable, preload=(), pool_size=_POOL_SIZE)
    except (SafeExecError, OSError):
        return None  # the backend starts its own, and reports what fails


def _warm_backend(
    policy: Policy, mode: str | None, early: TemplateProcess | None = None
) -> Backend | None:
    """The backend of the run's one mode with its template booting in the background (from
    ``early``, if it was started as this backend would), so that importing and running the
    gate overlaps the template's start; ``None`` for modes without a template (the session
    then makes its own). ``early`` is taken over or closed.

    A start that fails here is retried by the session's first open, which reports it.
    """
    chosen = mode or policy.backends.default
    backend = None
    if chosen in policy.backends.allowed:  # else the gate denies the step; nothing should start
        from safeexec.backends.registry import default_backend

        backend = default_backend(chosen, pool_size=_POOL_SIZE)
    if not isinstance(backend, _Startable):
        if early is not None:
            early.close()
        return None
    threading.Thread(target=_start_quietly, args=(backend, early), daemon=True).start()
    return backend


def _start_quietly(backend: _Startable, early: TemplateProcess | None) -> None:
    with contextlib.suppress(SafeExecError, OSError):
        backend.start(early)


def _split_transfer(spec: str) -> tuple[str, str]:
    """``"a.csv:data/a.csv"`` → ``("a.csv", "data/a.csv")``; no colon: no destination."""
    source, colon, dest = spec.rpartition(":")
    return (source, dest) if colon else (spec, "")


def _read(name: str) -> str:
    from safeexec.cli.inputs import read_input

    try:
        return read_input(name, what="files holding model replies")
    except ConfigurationError as exc:
        usage_error(str(exc))
