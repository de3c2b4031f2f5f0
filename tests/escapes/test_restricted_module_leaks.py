"""Modules reached through allowed modules: ``re.enum.sys``, ``json.decoder``, re-exports."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "import re\nre.enum.sys.modules['os']",
        "import re\nre._compiler",
        "import json\njson.decoder.sys",
        "import json\njson.scanner",
        "from json import decoder",
        "from collections import abc\nabc.sys",
        "import datetime\ndatetime.sys",
        "import statistics\nstatistics.sys",
        "import statistics\nstatistics.math.sys",
        "import random\nrandom._os",
        "import collections\ncollections._sys",
        "import typing\ntyping.sys",
        "import dataclasses\ndataclasses.sys",
        "import functools\nfunctools.reduce.__module__ and functools.sys",
        "import string\nstring.Formatter",
        "import copy\ncopy.sys",
        "import pathlib\npathlib.os",  # the pathlib view is the runtime's, not the module
        "import pathlib\npathlib.Path._ops",
        "import math\nmath.__loader__",
        "import math\nmath.__spec__",
        "import math\nvars(math)",
        "import math\nmath.__dict__",
        "import math\ntype(math).__dict__",
    ],
)
def test_modules_never_leak(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    assert "<module" not in outcome.stdout, outcome.text
    box.assert_usable()


@pytest.mark.parametrize(
    "code",
    [
        "import math\nmath.pi = 3",
        "import math\ndel math.sqrt",
        "import math\nsetattr(math, 'pi', 3)",
        "import json\njson.JSONEncoder.default = lambda self, o: 1",
        "import json\nsetattr(json.JSONEncoder, 'item_separator', ';')",
        "import dataclasses, json\ndataclasses.dataclass(json.JSONEncoder)",
        "import functools, json\nfunctools.total_ordering(json.JSONEncoder)",
        "import functools, json\nfunctools.wraps(len)(json.dumps)",
        "import string\nstring.ascii_letters += 'x'\nstring.ascii_letters",
        "import decimal\ndecimal.getcontext()",
    ],
)
def test_host_module_state_cannot_be_changed(restricted_box: BoxFactory, code: str) -> None:
    import json
    import math
    import string

    box = restricted_box()
    outcome = box.run(code)
    assert math.pi > 3.14 and json.JSONEncoder.item_separator == ", "
    assert string.ascii_letters.endswith("Z")
    assert outcome.status.value in ("error", "ok"), outcome.text
    box.assert_usable()


def test_seeding_random_does_not_touch_the_hosts_generator(restricted_box: BoxFactory) -> None:
    import random

    state = random.getstate()
    box = restricted_box()
    assert box.run("import random\nrandom.seed(1)\nrandom.random()").status.value == "ok"
    assert random.getstate() == state
