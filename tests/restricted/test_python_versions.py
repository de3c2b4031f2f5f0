"""What a newer Python adds to what the views hand out stays out of reach (3.12, 3.13)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from safeexec.restricted import GuardError, RestrictedExecutor
from safeexec.restricted.views import WorkerViews

_MODES = pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])


def _execute(code: str, workdir: Path, *, counting: bool) -> str | None:
    executor = RestrictedExecutor(
        imports=("pathlib", "random", "dataclasses"),
        count_operations=counting,
        workdir=workdir,
        views=WorkerViews,
    )
    return executor.execute(code, filename="<test>")


@_MODES
def test_a_pure_path_s_parser_is_refused(tmp_path: Path, counting: bool) -> None:
    # On 3.13 it is the real posixpath module, whose `os` runs host commands.
    for code in [
        "import pathlib\npathlib.PurePath('a').parser",
        "import pathlib\npathlib.Path('a').parser",
    ]:
        with pytest.raises(GuardError, match="'parser'"):
            _execute(code, tmp_path, counting=counting)


@_MODES
def test_an_own_object_s_parser_attribute_still_reads(tmp_path: Path, counting: bool) -> None:
    code = "class C:\n    def __init__(self):\n        self.parser = 3\nC().parser"
    assert _execute(code, tmp_path, counting=counting) == "3"


@_MODES
def test_seeding_with_a_string_changes_no_host_module_state(tmp_path: Path, counting: bool) -> None:
    # 3.13 imports sha512 into random's globals on the first string seed.
    before = dict(vars(random))
    code = "import random\nrandom.seed('abc')\nr = random.Random('xyz')\nr.random() < 1"
    assert _execute(code, tmp_path, counting=counting) == "True"
    assert dict(vars(random)) == before


@_MODES
def test_an_own_dataclass_s_repr_runs(tmp_path: Path, counting: bool) -> None:
    # 3.13 wraps the generated __repr__ in reprlib.recursive_repr.
    code = (
        "import dataclasses\n@dataclasses.dataclass\nclass P:\n    x: int\n"
        "p = P(1)\np.me = p\nrepr(p)"
    )
    assert _execute(code, tmp_path, counting=counting) == "'P(x=1)'"
