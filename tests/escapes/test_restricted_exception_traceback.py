"""Exceptions as a way out: ``__traceback__``, ``__context__``, frames and ``sys.exc_info``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__",
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back.f_globals",
        # __cause__/__context__ are readable (other exceptions or None); their tracebacks are not.
        "try:\n    try:\n        1/0\n    except Exception as e:\n        raise KeyError from e\n"
        "except KeyError as k:\n    k.__cause__.__traceback__",
        "try:\n    try:\n        1/0\n    except Exception:\n        raise KeyError\n"
        "except KeyError as k:\n    k.__context__.__traceback__.tb_frame",
        "try:\n    1/0\nexcept Exception as e:\n    e.with_traceback(None).__traceback__",
        "import sys\nsys.exc_info()",
        "import traceback\ntraceback.walk_tb",
        "import traceback\ntry:\n    1/0\nexcept Exception as e:\n"
        "    traceback.extract_tb(e.__traceback__)",
        "try:\n    1/0\nexcept* ZeroDivisionError:\n    pass",
    ],
)
def test_exception_internals_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()


def test_the_error_report_shows_only_sandbox_frames(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run("def f():\n    return 1 / 0\nf()")
    assert outcome.status.value == "error"
    assert "ZeroDivisionError" in outcome.stderr
    assert "safeexec" not in outcome.stderr.replace("safeexec.capabilities.gateway", "")
    assert "/work/" not in outcome.stderr and "site-packages" not in outcome.stderr
