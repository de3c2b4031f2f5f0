"""Ordinary reads and writes of the code's own objects in restricted mode: ``vars(obj)``,
``x.__class__.__name__`` and a ``decimal`` context the code made, and the host objects they
still refuse."""

from __future__ import annotations

import decimal

import pytest

from safeexec.restricted import GuardError, RestrictedExecutor
from safeexec.restricted.views import WorkerViews


def run(code: str, *imports: str) -> str | None:
    return RestrictedExecutor(imports=imports, views=WorkerViews).execute(code, filename="<test>")


def test_vars_of_an_own_instance_is_its_attribute_dict() -> None:
    code = (
        "class P:\n    def __init__(self):\n        self.x = 1\n"
        "p = P()\nvars(p)['y'] = 2\n(vars(p), p.y)"
    )
    assert run(code) == "({'x': 1, 'y': 2}, 2)"


@pytest.mark.parametrize(
    "target",
    ["", "P", "json", "[]", "decimal.Context()"],
    ids=["no-argument", "own-class", "module-view", "builtin-instance", "library-instance"],
)
def test_vars_refuses_anything_but_an_own_instance(target: str) -> None:
    code = f"import json, decimal\nclass P:\n    pass\nvars({target})"
    with pytest.raises(GuardError, match="vars"):
        run(code, "json", "decimal")


def test_class_name_through_class_is_the_type_not_a_metaclass() -> None:
    code = (
        "class S:\n    def name(self):\n        return self.__class__.__name__\n"
        "class Q(S):\n    pass\n(Q().name(), (1).__class__.__qualname__)"
    )
    assert run(code) == "('Q', 'int')"
    with pytest.raises(GuardError, match="metaclass"):
        run("class S:\n    pass\nS.__class__")
    with pytest.raises(GuardError, match="__mro__"):
        run("(1).__class__.__mro__")


def test_a_decimal_context_the_code_made_can_be_changed() -> None:
    code = (
        "from decimal import Decimal, localcontext, Context\n"
        "with localcontext() as ctx:\n    ctx.prec = 5\n    third = Decimal(1) / Decimal(3)\n"
        "own = Context()\nown.prec = 3\n(str(third), own.prec)"
    )
    before = decimal.getcontext().prec
    assert run(code, "decimal") == "('0.33333', 3)"
    assert decimal.getcontext().prec == before  # the host thread's context is untouched


def test_other_library_objects_stay_read_only() -> None:
    with pytest.raises(GuardError, match="cannot modify"):
        run("import decimal\nd = decimal.Decimal(1)\nd.x = 1", "decimal")
    with pytest.raises(AttributeError):
        run("import decimal\ndecimal.getcontext", "decimal")


def test_only_a_decimal_context_s_settings_can_be_written() -> None:
    with pytest.raises(GuardError, match="only"):
        run("import decimal\nc = decimal.Context()\nc.flags = {}", "decimal")


def test_a_thread_s_name_and_daemon_flag_can_be_set_before_it_starts() -> None:
    code = (
        "import threading\nt = threading.Thread(target=print)\nt.daemon = True\nt.name = 'w'\n"
        "(t.daemon, t.name)"
    )
    assert run(code, "threading") == "(True, 'w')"
    with pytest.raises(GuardError, match="only"):
        run("import threading\nthreading.Thread().run = print", "threading")
