"""The CLI as a user meets it: one-shot commands against ``python -c pass``, in the same run.

Each command is a fresh process (as from a shell), run round-robin with the baseline so machine
load hits all alike; medians of ``--repeat`` runs. The one-shot ``safeexec run`` starts a
template, checks and runs a file printing one number, and tears everything down.
Targets: ``safeexec run`` <= 5x, ``safeexec --help`` <= 3x a bare interpreter. ``template
boot+close`` (no target) is the native template's share of ``run``, for reading the rest.

Run: ``.venv/bin/python benchmarks/bench_cli.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from figures import Figure, interleaved_medians, record


def _command(argv: list[str], **env: str) -> Callable[[], object]:
    # As a user meets it: an installed package has its bytecode cached (the warm-up run writes
    # it for this checkout), so a shell's PYTHONDONTWRITEBYTECODE would only time recompiling.
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment.update(env)

    def run() -> object:
        return subprocess.run(
            argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment
        )

    return run


_TEMPLATE_ONLY = (
    "from safeexec.backends.native import NativeBackend\n"
    "backend = NativeBackend()\nbackend.start()\nbackend.close()"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    python = sys.executable
    cli = [python, "-c", "from safeexec.cli.app import main; main()"]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        root = Path(scratch)
        script = root / "t.py"
        script.write_text("print(6 * 7)\n", encoding="utf-8")
        state = str(root / "state")
        work = {
            "python -c pass": _command([python, "-c", "pass"]),
            "safeexec --help": _command([*cli, "--help"]),
            "safeexec explain SX201": _command([*cli, "explain", "SX201"]),
            "safeexec check t.py": _command([*cli, "check", str(script)]),
            "safeexec run t.py": _command(
                [*cli, "run", "--state-dir", state, str(script)], XDG_STATE_HOME=state
            ),
            # The template's share of a one-shot run: a host that only imports the native
            # backend, boots a template to ready and closes it.
            "template boot+close": _command([python, "-c", _TEMPLATE_ONLY]),
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
