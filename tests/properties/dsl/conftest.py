"""The DSL's property suites share the DSL tests' support module (``tests/dsl/dsl_support.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dsl"))
