"""ctypes, and every other route to raw memory or the import machinery, stays out."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from restricted_support import BoxFactory


@pytest.mark.parametrize(
    "code",
    [
        "import ctypes",
        "from ctypes import CDLL",
        "import importlib",
        "import sys\nsys.modules",  # the sys view holds facts only
        "import gc",
        "import inspect",
        "import traceback\ntraceback.sys",
        "import logging.config",
        "import builtins",
        "import _ctypes",
        "from . import x",
        "import json\njson.decoder.c_scanstring",
        "__import__('ctypes')",
    ],
)
def test_dangerous_imports_are_refused(restricted_box: BoxFactory, code: str) -> None:
    box = restricted_box()
    outcome = box.run(code)
    assert outcome.status.value == "error", outcome.text
    box.assert_usable()
