"""The CLI as a user meets it: one-shot commands against ``python -c pass``, in the same run.

Each command is a fresh process (as from a shell), run round-robin with the baseline so machine
load hits all alike; medians of ``--repeat`` runs. The one-shot ``safeexec run`` starts a
template, checks and runs a file printing one number, and tears everything down.
Targets: ``safeexec run`` <= 5x, ``safeexec --help`` <= 3x a bare interpreter. ``template
boot+close`` (no target) is the native template's share of ``run``, for reading the rest.

Both sides run as a user's installation has them, not as this checkout's development
environment does: safeexec installed from its wheel into a scratch virtual environment whose
dependencies are this environment's packages (on ``sys.path``, their ``.pth`` hooks not run). An
editable install runs its import hook at every interpreter start (about 10 ms, ``python -c
pass`` included), which would inflate the baseline and flatter every ratio.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from pathlib import Path

from figures import Figure, interleaved_medians, record


def _command(argv: list[str], *, cwd: Path, **env: str) -> Callable[[], object]:
    # As a user meets it: in a directory of their own (not this checkout, which ``-c`` would put
    # first on sys.path), with the installed package's bytecode cached, so a shell's
    # PYTHONDONTWRITEBYTECODE is dropped.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment.update(env)

    def run() -> object:
        return subprocess.run(
            argv,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=environment,
            cwd=cwd,
        )

    return run


_TEMPLATE_ONLY = (
    "from safeexec.backends.native import NativeBackend\n"
    "backend = NativeBackend()\nbackend.start()\nbackend.close()"
)


def installed_python(scratch: Path) -> str:
    """The interpreter of a scratch virtual environment holding safeexec installed from a wheel
    built from this checkout, with this environment's packages as its dependencies."""
    wheels, env = scratch / "wheel", scratch / "venv"
    checkout = str(Path(__file__).resolve().parents[1])
    pip = [sys.executable, "-m", "pip", "--quiet"]
    _quietly([*pip, "wheel", "--no-deps", "-w", str(wheels), checkout])
    _quietly([sys.executable, "-m", "venv", "--without-pip", str(env)])
    python = str(env / "bin" / "python")
    where = "import sysconfig; print(sysconfig.get_path('purelib'))"
    purelib = subprocess.run([python, "-c", where], check=True, capture_output=True, text=True)
    # A path line in a .pth file: this environment's packages importable, their hooks not run.
    dependencies = Path(purelib.stdout.strip(), "dependencies.pth")
    dependencies.write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    wheel = [str(w) for w in wheels.glob("safeexec-*.whl")]
    _quietly([*pip, "--python", python, "install", "--no-deps", "--no-index", *wheel])
    return python


def _quietly(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        root = Path(scratch)
        python = installed_python(root)
        cli = [str(Path(python).with_name("safeexec"))]  # the console script pip installed
        script = root / "t.py"
        script.write_text("print(6 * 7)\n", encoding="utf-8")
        state = str(root / "state")
        work = {
            "python -c pass": _command([python, "-c", "pass"], cwd=root),
            "safeexec --help": _command([*cli, "--help"], cwd=root),
            "safeexec explain SX201": _command([*cli, "explain", "SX201"], cwd=root),
            "safeexec check t.py": _command([*cli, "check", str(script)], cwd=root),
            "safeexec run t.py": _command(
                [*cli, "run", "--state-dir", state, str(script)], cwd=root, XDG_STATE_HOME=state
            ),
            # The template's share of a one-shot run: a host that only imports the native
            # backend, boots a template to ready and closes it.
            "template boot+close": _command([python, "-c", _TEMPLATE_ONLY], cwd=root),
        }
        load_before = os.getloadavg()[0]
        medians = interleaved_medians(work, repeat=args.repeat)
    base = medians.pop("python -c pass")
    loads = f"load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    print(f"CLI one-shot commands, median of {args.repeat} (fresh process each; {loads})")
    print(f"  {'python -c pass':<24} {base * 1e3:>8.1f} ms")
    for name, seconds in medians.items():
        print(f"  {name:<24} {seconds * 1e3:>8.1f} ms  {seconds / base:>6.1f}x")
    targets = {"safeexec run t.py": 5.0, "safeexec --help": 3.0}
    record(
        [
            Figure(
                figure=f"`{name}` (one-shot)",
                peer_name="`python -c pass`",
                safeexec=seconds,
                peer=base,
                unit="s",
                bound="at_most" if name in targets else "none",
                limit=targets.get(name, 0.0),
            )
            for name, seconds in medians.items()
        ],
        source="bench_cli",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
