"""The tool-call bound folds literal sequences bound once to a name, and only those (SX602)."""

from __future__ import annotations

import ast

import pytest

from safeexec.analysis.trips import fixed_sequences
from safeexec.gate import check
from safeexec.policy import load_policy

# `send_email` has max_calls = 5 in the shipped default pack.
LIMITED = "send_email"


def _sx602(code: str) -> list[str]:
    policy = load_policy("default")
    return [f.message for f in check(code, policy).findings if f.rule == "SX602"]


@pytest.mark.parametrize(
    "binding",
    [
        "targets = ['a', 'b', 'c']",
        "targets = ('a', 'b', 'c')",
        "targets = {'a', 'b', 'c'}",
        "targets = {'a': 1, 'b': 2, 'c': 3}",
        "targets = range(3)",
    ],
)
def test_a_loop_over_a_literal_bound_once_is_counted(binding: str) -> None:
    code = f"{binding}\nfor t in targets:\n    {LIMITED}(to=t)\n"
    assert _sx602(code) == []
    wrapped = f"{binding}\nfor t in enumerate(sorted(targets)):\n    {LIMITED}(to=t)\n"
    assert _sx602(wrapped) == []


def test_the_folded_count_still_multiplies_past_the_limit() -> None:
    code = (
        "targets = ['a', 'b', 'c']\n"
        "for t in targets:\n"
        "    for again in range(2):\n"
        f"        {LIMITED}(to=t)\n"
    )
    (message,) = _sx602(code)
    assert "6 times" in message


@pytest.mark.parametrize(
    "change",
    [
        "targets.append('d')",  # grows in place
        "targets += ['d']",  # rebinding
        "more = targets",  # an alias could grow it
        "helper(targets)",  # so could a callee
        "targets[0:0] = ['x', 'y']",  # slice assignment grows it
        "del targets[0]",  # an item write
        "def f():\n    global targets\n    targets = list(range(100))",  # once crashed the check
        "for targets in [[1] * 100]:\n    pass",
        "globals()['targets'].extend(range(100))",  # reached through the namespace
    ],
)
def test_a_sequence_that_can_change_is_not_folded(change: str) -> None:
    code = f"targets = ['a', 'b', 'c']\n{change}\nfor t in targets:\n    {LIMITED}(to=t)\n"
    (message,) = _sx602(code)
    assert "unbounded times" in message


def test_only_top_level_single_bindings_are_candidates() -> None:
    tree = ast.parse(
        "a = [1, 2]\n"
        "b = c = [1]\n"  # two targets: not a candidate
        "if True:\n    d = [1]\n"  # not at the top level
        "e = (1, 2, 3)\n"
        "print(a[0], len(a), e)\n"  # only read-only uses of a; e is immutable
    )
    assert set(fixed_sequences(tree)) == {"a", "e"}
