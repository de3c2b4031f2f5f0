"""The DSL (its parser and checker) is imported on first use only: ``safeexec run`` of Python
never pays for it, and a later DSL step in the same process still works. Lark, the reference
parser, is not imported even then: CPython's parser takes the program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Runs the CLI's own entry point on a Python reply, then a DSL step in the same process, and
# prints which DSL modules were loaded before and after the DSL step.
_SCRIPT = """
import json, sys
from safeexec.cli.app import main
from safeexec.session.session import Session

def dsl_modules():
    return sorted(m for m in sys.modules if m == "lark" or m.startswith(("lark.", "safeexec.dsl.")))

state_dir, reply = sys.argv[1], sys.argv[2]
sys.argv = ["safeexec", "run", "--mode", "restricted", "--state-dir", state_dir, reply]
try:
    main()
except SystemExit:
    pass
after_python = dsl_modules()
with Session(mode="dsl", state_dir=state_dir) as session:
    outcome = session.run("x = 2\\nreturn x * 21")
print(json.dumps({"python": after_python, "dsl": dsl_modules(), "out": outcome.observation.text}))
"""


def test_running_python_never_imports_the_dsl_and_its_first_use_works(tmp_path: Path) -> None:
    reply = tmp_path / "reply.py"
    reply.write_text("print(6 * 7)\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path / "state"), str(reply)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # Light modules only (the [dsl] limits the policy schema holds, the plan card's reader).
    heavy = {"lark", "safeexec.dsl.parser", "safeexec.dsl.checker",
             "safeexec.dsl.front", "safeexec.dsl.compiler", "safeexec.dsl.valuetypes"}  # fmt: skip
    assert not heavy & set(report["python"]), report["python"]
    assert not any(m.startswith("lark.") for m in report["python"]), report["python"]
    assert "safeexec.dsl.checker" in report["dsl"]
    assert "lark" not in report["dsl"] and "safeexec.dsl.lark_parse" not in report["dsl"]
    assert "42" in report["out"]
