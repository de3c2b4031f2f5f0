"""The supported Pythons are one list: what pyproject classifies, what CI runs and what the
restricted runtime's module views are pinned for agree."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from safeexec.restricted.derived_views import GOLDEN_PATH

ROOT = Path(__file__).resolve().parent.parent


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _ci_versions() -> set[str]:
    """``requires-python``'s floor (``make test``, the default venv) plus ``make test-matrix``'s."""
    floor = re.fullmatch(r">=(\d+\.\d+)", str(_project()["requires-python"]))
    assert floor, "requires-python is a plain floor"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    matrix = re.search(r"^MATRIX := (.+)$", makefile, re.MULTILINE)
    assert matrix, "the Makefile names its MATRIX"
    return {floor.group(1), *matrix.group(1).split()}


def _classified_versions() -> set[str]:
    prefix = "Programming Language :: Python :: "
    classifiers = _project()["classifiers"]
    assert isinstance(classifiers, list)
    return {c.removeprefix(prefix) for c in classifiers if re.fullmatch(r".* :: \d+\.\d+", c)}


def test_the_classifiers_name_the_pythons_ci_runs() -> None:
    assert _classified_versions() == _ci_versions()


def test_every_python_ci_runs_has_pinned_module_views() -> None:
    pins = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))
    assert set(pins) == _ci_versions()


def test_the_classifiers_say_linux() -> None:
    classifiers = _project()["classifiers"]
    assert isinstance(classifiers, list)
    assert "Operating System :: POSIX :: Linux" in classifiers
