"""A script that ends with ``sys.exit(0)`` ended well; any other exit is the cell's error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from safeexec.model.values import ExecStatus
from safeexec.session.session import Session


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    state = tmp_path_factory.mktemp("state")
    with Session(policy="default", mode="native", state_dir=state) as opened:
        yield opened


def _run(session: Session, code: str) -> tuple[ExecStatus, str]:
    outcome = session.run(f"```python\n{code}```")
    assert outcome.result is not None, outcome.observation.text
    return outcome.result.status, outcome.observation.text


@pytest.mark.parametrize(
    "ending",
    [
        "import sys\nsys.exit(0)",
        "import sys\nsys.exit()",
        "exit(0)",
        "raise SystemExit",
        "quit()",
        "import sys\nsys.exit(False)",
    ],
)
def test_a_clean_exit_is_an_ordinary_end(session: Session, ending: str) -> None:
    status, text = _run(session, f"print('done')\n{ending}\nprint('never')\n")
    assert status is ExecStatus.OK
    assert "done" in text and "never" not in text and "SystemExit" not in text


@pytest.mark.parametrize(
    "ending",
    [
        "import sys\nsys.exit(3)",
        "import sys\nsys.exit('bad input')",
        # A subclass, or a code whose comparison the cell wrote, is never taken for a clean end.
        "class Quiet(SystemExit):\n    pass\nraise Quiet(0)",
        "class Zero(int):\n    def __eq__(self, other):\n        return True\n"
        "raise SystemExit(Zero(5))",
    ],
)
def test_any_other_exit_is_an_error(session: Session, ending: str) -> None:
    status, text = _run(session, f"print('done')\n{ending}\n")
    assert status is ExecStatus.ERROR
    assert "done" in text


def test_the_session_goes_on_after_a_clean_exit(session: Session) -> None:
    _run(session, "kept = 41\nimport sys\nsys.exit(0)\n")
    status, text = _run(session, "print(kept + 1)\n")
    assert status is ExecStatus.OK and "42" in text
