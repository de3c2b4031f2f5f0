"""Derived stdlib views: the public API minus the denylist, capped by the reviewed golden."""

from __future__ import annotations

import importlib
import io
import json
import sys

import pytest

from safeexec.restricted import (
    DENIED_ATTRIBUTES,
    MODULE_ALLOWLISTS,
    GuardError,
    RestrictedExecutor,
)
from safeexec.restricted.derived_views import (
    DERIVED_DENIED,
    DERIVED_MODULES,
    GOLDEN_PATH,
    derived_names,
    pinned_version,
    pinned_views,
    regenerate,
)
from safeexec.restricted.stdlib_wrappers import _SPECIAL_VALUES

_UPDATE = (
    "review each name `python -m safeexec.restricted.derived_views` prints (a dangerous "
    "one goes into DERIVED_DENIED with its reason), run the reachability crawler "
    "(test_reachability.py) over every shipped pack, then write the pins with "
    "`make module-views` (`--write` under each supported Python)"
)
_RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"
# Denied names newer than the oldest supported Python: the version that added each.
_DENIED_SINCE = {
    "typing.override": (3, 12),
    "uuid.main": (3, 12),
    "copy.replace": (3, 13),
    "enum.EnumDict": (3, 13),
}


def _execute(code: str, *, counting: bool = False) -> str | None:
    executor = RestrictedExecutor(imports=tuple(MODULE_ALLOWLISTS), count_operations=counting)
    return executor.execute(code, filename="<test>")


def test_the_golden_pins_what_this_interpreter_derives() -> None:
    golden = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
    assert _RUNNING in golden, f"no pin for Python {_RUNNING}: {_UPDATE}"
    pinned, fresh = golden[_RUNNING], regenerate(golden)[_RUNNING]
    assert set(pinned) == set(DERIVED_MODULES), f"modules changed: {_UPDATE}"
    for name in DERIVED_MODULES:
        added = sorted(set(fresh[name]) - set(pinned[name]))
        removed = sorted(set(pinned[name]) - set(fresh[name]))
        assert not added, f"{name} has new public names {added}: {_UPDATE}"
        assert not removed, f"{name} no longer derives {removed}: {_UPDATE}"


def test_every_denied_name_is_a_public_name_of_its_module() -> None:
    # A misspelt entry would deny nothing and leave the real name in the view; a name newer than
    # this Python must be absent here (or its "since" is wrong). CI runs this on each version.
    for module, denied in DERIVED_DENIED.items():
        real = importlib.import_module(module)
        for name in denied:
            since = _DENIED_SINCE.get(f"{module}.{name}", (3, 11))
            present = sys.version_info[:2] >= since
            assert hasattr(real, name) == present, f"{module}.{name}: since {since}?"
            assert not name.startswith("_")


_PINS = {
    "3.11": {"math": ["gcd"]},
    "3.13": {"math": ["fma", "gcd"], "re": ["PatternError"]},
    "3.12": {"math": ["gcd", "sumprod"]},
}


def test_a_python_uses_its_own_pin() -> None:
    assert pinned_version(_PINS, (3, 12)) == "3.12"
    assert pinned_views(_PINS, (3, 12))["math"] == {"gcd", "sumprod"}
    assert pinned_views(_PINS, (3, 12))["re"] == frozenset()  # absent from the pin: fail closed


def test_an_unpinned_python_uses_the_newest_older_pin_never_a_newer_one() -> None:
    assert pinned_version(_PINS, (3, 14)) == "3.13"
    assert pinned_views(_PINS, (3, 14))["math"] == {"fma", "gcd"}
    assert pinned_version({"3.11": {}, "3.13": {}}, (3, 12)) == "3.11"
    assert pinned_version(_PINS, (3, 10)) is None
    assert all(not names for names in pinned_views(_PINS, (3, 10)).values())


def test_regenerating_replaces_this_python_s_pin_only() -> None:
    fresh = regenerate(_PINS)  # type: ignore[arg-type]
    others = {v: p for v, p in _PINS.items() if v != _RUNNING}
    assert {v: p for v, p in fresh.items() if v != _RUNNING} == others
    assert fresh[_RUNNING] == {name: sorted(derived_names(name)) for name in DERIVED_MODULES}


def test_the_in_process_re_view_has_the_worker_view_s_names_on_this_python() -> None:
    # The timed engine has no RegexFlag enum and no template(); every other name (PatternError
    # from 3.13) is there in-process too.
    missing = set()
    for name in sorted(MODULE_ALLOWLISTS["re"] & derived_names("re")):
        try:
            _execute(f"import re\nre.{name}", counting=True)
        except AttributeError:
            missing.add(name)
    assert missing <= {"RegexFlag", "template"}


@pytest.mark.parametrize("counting", [False, True], ids=["worker", "in-process"])
@pytest.mark.parametrize(
    "code",
    [
        "import decimal\nwith decimal.localcontext() as c:\n    c.prec = 3\n"
        "    x = decimal.Decimal(1) / 3\nstr(x) == '0.333'",
        "import unicodedata\nunicodedata.combining('\\u0301') == 230",
        "import statistics\nround(statistics.correlation([1, 2, 3], [2, 4, 7]), 2) == 0.99",
        "import itertools\nlist(itertools.pairwise('abc')) == [('a', 'b'), ('b', 'c')]",
        "import math\nmath.lcm(4, 6) == 12",
        "import cmath\ncmath.sin(0) == 0",
        "import random\nrandom.seed(1)\nrandom.lognormvariate(0, 1) > 0",
        "import time\ntime.monotonic_ns() > 0",
        "import typing\ntyping.get_args(typing.Union[int, str]) == (int, str)",
        "import base64\nbase64.b85decode(base64.b85encode(b'hi')) == b'hi'",
        "import hashlib\nlen(hashlib.sha3_256(b'x').hexdigest()) == 64",
        "import difflib\nlist(difflib.context_diff(['a'], ['b']))[0].startswith('***')",
        "import operator\noperator.call(len, 'ab') == 2",
        "import secrets\n0 <= secrets.randbits(4) < 16",
        "import zlib\nzlib.decompress(zlib.compress(b'a', level=zlib.Z_BEST_SPEED)) == b'a'",
        "import uuid\nuuid.uuid5(uuid.NAMESPACE_OID, 'x').version == 5",
        "import calendar\ncalendar.timegm((1970, 1, 2, 0, 0, 0)) == 86400",
        "import csv\ncsv.Sniffer().sniff('a;b\\n1;2\\n').delimiter == ';'",
        "from collections import abc\nisinstance([], abc.Sequence)",
        "import datetime\ndatetime.datetime(2020, 1, 1, tzinfo=datetime.UTC).year == 2020",
    ],
)
def test_formerly_missing_ordinary_functions_run(code: str, counting: bool) -> None:
    assert _execute(code, counting=counting) == "True"


def test_pprint_pp_writes_to_the_cell_and_keeps_dict_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sink = io.StringIO()
    executor = RestrictedExecutor(imports=("pprint",), sink=sink)
    executor.execute("import pprint\npprint.pp({'b': 1, 'a': 2})", filename="<test>")
    assert sink.getvalue() == "{'b': 1, 'a': 2}\n"
    assert capsys.readouterr().out == ""


_DENIED = [(m, n) for m, names in sorted(DERIVED_DENIED.items()) for n in sorted(names)]


@pytest.mark.parametrize(("module", "name"), _DENIED, ids=[f"{m}.{n}" for m, n in _DENIED])
def test_each_denied_name_is_refused_with_its_reason(module: str, name: str) -> None:
    reason = DERIVED_DENIED[module][name]
    if name in DENIED_ATTRIBUTES:  # refused on every object, before the module is asked
        with pytest.raises(GuardError, match=f"access to attribute {name!r}"):
            _execute(f"import {module}\n{module}.{name}")
    else:
        with pytest.raises(AttributeError) as read:
            _execute(f"import {module}\n{module}.{name}")
        assert f"has no attribute {name!r}" in str(read.value) and reason in str(read.value)
    with pytest.raises(ImportError) as imported:
        _execute(f"from {module} import {name}")
    assert f"{module!r}" in str(imported.value) and reason in str(imported.value)


def test_an_undocumented_absent_name_is_still_refused() -> None:
    with pytest.raises(AttributeError, match=r"has no attribute 'nope' \(not allowed\)"):
        _execute("import math\nmath.nope")


def test_a_public_name_missing_from_the_golden_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a newer Python's new function looks like: derived here, absent from the golden.
    assert "lcm" in derived_names("math")
    monkeypatch.setitem(MODULE_ALLOWLISTS, "math", MODULE_ALLOWLISTS["math"] - {"lcm"})  # type: ignore[index]
    with pytest.raises(AttributeError, match="has no attribute 'lcm'"):
        _execute("import math\nmath.lcm(2, 3)")
    assert _execute("import math\nmath.gcd(4, 6)") == "2"


def test_a_denied_name_put_into_the_golden_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        MODULE_ALLOWLISTS,  # type: ignore[arg-type]
        "decimal",
        MODULE_ALLOWLISTS["decimal"] | {"getcontext"},
    )
    with pytest.raises(AttributeError, match="has no attribute 'getcontext'"):
        _execute("import decimal\ndecimal.getcontext()")


def test_no_derived_name_bypasses_a_wrapper() -> None:
    # A name that is another name's wrapped object (an alias) must carry the wrapper too.
    wrapped = {}
    for full in _SPECIAL_VALUES:
        module, _, attr = full.rpartition(".")
        real = importlib.import_module(module)
        if hasattr(real, attr):
            wrapped[id(getattr(real, attr))] = full
    for module in DERIVED_MODULES:
        real = importlib.import_module(module)
        for name in MODULE_ALLOWLISTS[module] & derived_names(module):
            original = wrapped.get(id(getattr(real, name)))
            if original is not None:
                assert f"{module}.{name}" in _SPECIAL_VALUES, f"{module}.{name} is {original}"
