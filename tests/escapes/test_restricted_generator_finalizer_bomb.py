"""A suspended generator's ``finally``/``except`` runs when the host collects it, after the run.

In the in-process variant that is host time outside every watchdog: the handler would run the
code's statements with nobody counting. Every handler starts with a budget tick, and outside a
run the budget is closed, so the handler raises at its first line instead.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

import pytest

from safeexec.backends.restricted import InProcessRestrictedSession

if TYPE_CHECKING:
    from restricted_support import BoxFactory


# The collected generator's handler raises (that is the point); pytest reports it as unraisable.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(
    "handler",
    [
        "    finally:\n        open('bomb.txt', 'w').write('fired')\n",
        "    except GeneratorExit:\n        open('bomb.txt', 'w').write('fired')\n        raise\n",
        "    except BaseException:\n        open('bomb.txt', 'w').write('fired')\n        raise\n",
    ],
)
def test_a_suspended_generator_handler_does_not_run_after_the_run(
    restricted_box: BoxFactory, handler: str
) -> None:
    box = restricted_box()
    code = "def bomb():\n    try:\n        yield 1\n" + handler + "held = bomb()\nnext(held)\n"
    outcome = box.run(code)
    assert outcome.status.value == "ok", outcome.text
    box.session.reset()  # drops the namespace: the generator is collected now
    gc.collect()
    if isinstance(box.session, InProcessRestrictedSession):
        assert not (box.session.workdir / "bomb.txt").exists()
    box.assert_usable()


def test_handlers_still_run_during_the_run(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = (
        "def gen():\n    try:\n        yield 1\n    finally:\n        print('closed')\n"
        "g = gen()\nnext(g)\ng.close()\n"
        "try:\n    1 / 0\nexcept ZeroDivisionError:\n    print('caught')\n"
        "finally:\n    print('done')\n"
    )
    outcome = box.run(code)
    assert outcome.stdout == "closed\ncaught\ndone\n", outcome.text
