"""A million-link exception chain (``raise ValueError(i) from e`` in a loop), or a group of a
million exceptions, raised at the end.

In-process, the traceback is formatted in the host after the run, where no budget counts: the
whole chain would be walked and formatted. Only the first links are kept, and a huge group is
reported by its line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from safeexec.backends.restricted import InProcessRestrictedSession

if TYPE_CHECKING:
    from restricted_support import BoxFactory

CHAIN = """
e = None
for i in range(200_000):
    try:
        raise ValueError(i) from e
    except ValueError as x:
        e = x
raise e
"""


def test_a_long_exception_chain_is_reported_shortly(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run(CHAIN, cpu_seconds=20.0, wall_seconds=40.0)
    assert outcome.status.value == "error", outcome.text
    assert "ValueError: 199999" in outcome.text
    if isinstance(box.session, InProcessRestrictedSession):
        # (The worker formats the whole chain where it can be killed; its output is capped.)
        assert outcome.stderr.count("ValueError") < 100, outcome.stderr[:2000]
    box.assert_usable()


def test_an_ordinary_chain_is_reported_whole(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = """
try:
    try:
        {}['missing']
    except KeyError as e:
        raise ValueError('bad input') from e
except ValueError as e:
    raise RuntimeError('step failed') from e
"""
    outcome = box.run(code)
    for line in ("KeyError: 'missing'", "ValueError: bad input", "RuntimeError: step failed"):
        assert line in outcome.stderr, outcome.stderr


def test_a_huge_exception_group_is_reported_by_its_line(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    code = "raise ExceptionGroup('many', [ValueError(i) for i in range(300_000)])"
    outcome = box.run(code, cpu_seconds=20.0, wall_seconds=40.0)
    assert outcome.status.value == "error", outcome.text
    assert "300000 sub-exceptions" in outcome.text
    box.assert_usable()


def test_a_small_exception_group_keeps_its_traceback(restricted_box: BoxFactory) -> None:
    box = restricted_box()
    outcome = box.run("raise ExceptionGroup('two', [ValueError(1), KeyError(2)])")
    assert "ValueError: 1" in outcome.stderr and "KeyError: 2" in outcome.stderr, outcome.stderr
