"""Every documented ``make`` target installs what its code imports (issue 34).

What a target installs is read from ``make -n -B TARGET`` (the pip installs into ``.venv`` a
fresh clone would run, with their extras); what it needs, from the code its command runs: the
modules and scripts it starts, and every first-party module they import, at module level or in a
function, followed statically. A third-party import is needed unless it is optional (inside
``try`` ... ``except ImportError``) or for type checking only; it is satisfied when its
distribution is a requirement of the project or of an installed extra, directly or through
their own requirements. ``make bench`` once installed ``bench`` but not ``service``, which its
``bench_service.py`` imports: it worked only where ``make test`` had installed more.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The targets the README and the Makefile's header document.
TARGETS = ("demo", "test", "test-fast", "lint", "bench", "ablation", "agentdojo", "docs")
FIRST_PARTY = ("safeexec", "benchmarks", "tests")
_INSTALL = re.compile(r"^\.venv/bin/python -m pip install .*'\.\[([^\]]*)\]'")
_RUN = re.compile(r"^(?:\w+=\S+ )*\.venv/bin/(\S+)(.*)$")
# What a command runs beyond its own imports: files it starts as processes or loads by path.
_STARTED = {
    "benchmarks/summary.py": ("benchmarks/bench_*.py",),  # each bench_* runs as its own process
    "pytest": ("tests/**/*.py",),
    "mkdocs": ("docs/hooks/*.py",),  # mkdocs.yml's hooks
}
_TOOLS = frozenset({"ruff", "mypy", "lint-imports"})  # run as commands: they import nothing of ours


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def make_plan(target: str) -> tuple[frozenset[str], list[str]]:
    """The extras ``target`` installs into ``.venv`` and the commands it then runs."""
    printed = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    extras: set[str] = set()
    commands = []
    for line in printed:
        if found := _INSTALL.match(line):
            extras.update(e.strip() for e in found.group(1).split(",") if e.strip())
        elif "pip install" not in line and _RUN.match(line):
            commands.append(line)
    return frozenset(extras), commands


def entry_files(command: str) -> list[Path]:
    """The Python files a ``.venv/bin/...`` command line runs."""
    found = _RUN.match(command)
    assert found is not None, command
    program, args = found.group(1), shlex.split(found.group(2))
    if program in _TOOLS:
        return []
    if program == "python" and args[:1] == ["-m"] and args[1] != "pytest":
        return [_module_file(args[1], main=True)]
    key = "pytest" if program == "python" else program
    if program == "python" and args[:1] != ["-m"]:
        key = args[0]
    files = [ROOT / key] if key.endswith(".py") else []
    for pattern in _STARTED.get(key, ()):
        files.extend(sorted(ROOT.glob(pattern)))
    assert files, f"no code known for {command!r}: add it to _STARTED"
    return files


def _module_file(module: str, *, main: bool = False) -> Path:
    base = ROOT.joinpath(*module.split("."))
    if base.is_dir():
        return base / ("__main__.py" if main and (base / "__main__.py").exists() else "__init__.py")
    return base.with_suffix(".py")


def _resolve(name: str, importer: Path) -> Path | None:
    """The first-party file ``name`` names when imported from ``importer`` (None: not ours)."""
    if name.split(".")[0] in FIRST_PARTY:
        for candidate in (name, name.rpartition(".")[0]):  # `from a.b import c`: c may be a name
            if candidate and (
                (path := _module_file(candidate)).exists()
                or (path := ROOT.joinpath(*candidate.split("."), "__init__.py")).exists()
            ):
                return path
        return None
    local = importer.parent / f"{name.split('.')[0]}.py"  # a script's sibling (sys.path[0])
    if local.exists():
        return local
    # A module of this repository on a path its importer adds (sys.path.insert: tests/service).
    elsewhere = _repository_modules().get(name.split(".")[0], [])
    return elsewhere[0] if len(elsewhere) == 1 else None


@cache
def _repository_modules() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for top in (*FIRST_PARTY, "docs", "examples"):
        for path in sorted((ROOT / top).rglob("*.py")):
            found.setdefault(path.stem, []).append(path)
    return found


def _optional(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Inside ``try: ... except ImportError`` or ``if TYPE_CHECKING:``."""
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.Try) and node in parent.body:
            caught = {ast.unparse(h.type) for h in parent.handlers if h.type is not None}
            if any("ImportError" in c or "ModuleNotFoundError" in c for c in caught):
                return True
        if isinstance(parent, ast.If) and "TYPE_CHECKING" in ast.unparse(parent.test):
            return node in parent.body
        node = parent
    return False


@cache
def _imports(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(first-party files, third-party top-level names) that ``path`` needs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    ours: list[str] = []
    theirs: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:  # relative: ours
            package = path.parent
            for _ in range(node.level - 1):
                package = package.parent
            dotted = ".".join((*package.relative_to(ROOT).parts, node.module))
            names = [dotted]
        if not names or _optional(node, parents):
            continue
        for name in names:
            resolved = _resolve(name, path)
            if resolved is not None:
                ours.append(str(resolved))
            elif name.split(".")[0] not in (*FIRST_PARTY, *sys.stdlib_module_names, "__future__"):
                theirs.append(name.split(".")[0])
    return tuple(ours), tuple(theirs)


def third_party_needs(files: list[Path]) -> dict[str, Path]:
    """Every third-party top-level module the files and their first-party imports need, with a
    file that needs it."""
    seen: set[Path] = set()
    needs: dict[str, Path] = {}
    stack = list(files)
    while stack:
        path = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        ours, theirs = _imports(path)
        stack.extend(Path(p) for p in ours)
        for name in theirs:
            needs.setdefault(name, path)
    return needs


@cache
def _requirements(extras: frozenset[str]) -> frozenset[str]:
    """The project's requirements with ``extras``, and theirs, as normalised names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = list(project["dependencies"])
    for extra in extras:
        direct.extend(project["optional-dependencies"][extra])
    names: set[str] = set()
    stack = [_normal(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in direct]
    while stack:
        name = stack.pop()
        if name in names:
            continue
        names.add(name)
        try:
            required = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in required:
            if "extra ==" in requirement:
                continue
            stack.append(_normal(re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]))
    return frozenset(names)


@cache
def _installed() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


def _distributions(module: str) -> set[str]:
    return {_normal(d) for d in _installed().get(module, [module])}


@pytest.mark.parametrize("target", TARGETS)
def test_a_targets_extras_provide_every_module_its_code_imports(target: str) -> None:
    extras, commands = make_plan(target)
    assert commands, f"make {target} runs nothing"
    files = [f for command in commands for f in entry_files(command)]
    provided = _requirements(extras)
    missing = {
        module: str(path.relative_to(ROOT))
        for module, path in third_party_needs(files).items()
        if not _distributions(module) & provided
    }
    assert not missing, f"make {target} installs [{','.join(sorted(extras))}]; not: {missing}"


def test_the_check_sees_the_extra_bench_lacked() -> None:
    # make bench before this check: [dev,data,bench], while its service benchmarks need the
    # service extra (found through tests/service, which bench_service_abuse.py puts on its path).
    _, commands = make_plan("bench")
    needs = third_party_needs([f for command in commands for f in entry_files(command)])
    assert "fastapi" in needs
    assert not _distributions("fastapi") & _requirements(frozenset({"dev", "data", "bench"}))
