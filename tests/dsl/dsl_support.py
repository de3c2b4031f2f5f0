"""Shared by the DSL tests and the benchmark: the example tools, granted, and a runner."""

from __future__ import annotations

import atexit
import functools
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from safeexec.audit.blobs import BlobStore
from safeexec.backends.base import SessionSpec
from safeexec.backends.dsl import DslBackend, DslSession, InProcessDslBackend, InProcessDslSession
from safeexec.backends.native import NativeBackend
from safeexec.capabilities.gateway import CapabilitySet, ToolSpec
from safeexec.dsl.front import FrontResult, check_source
from safeexec.dsl.limits import DslLimits
from safeexec.dsl.plan import Plan
from safeexec.dsl.signatures import ToolSignature, signatures_of
from safeexec.model.values import ExecRequest, ExecResult, Limits
from safeexec.sandbox.dsl_runtime import DslRuntime

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "dsl" / "examples"
# Grants the examples run under: the effectful tools are tightly limited.
MAX_CALLS = {"reserve": 3, "book": 2, "transfer": 1, "open_page": 20, "get_quote": 10}


def example_tools() -> ModuleType:
    name = "safeexec_dsl_example_tools"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "tools.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def example_specs() -> tuple[ToolSpec, ...]:
    return tuple(example_tools().TOOLS)


def granted(max_calls: dict[str, int] | None = None) -> CapabilitySet:
    caps = CapabilitySet(approve=lambda request: True)
    limits = MAX_CALLS if max_calls is None else max_calls
    for spec in example_specs():
        caps.grant(spec, max_calls=limits.get(spec.name))
    return caps


def signatures(max_calls: dict[str, int] | None = None) -> tuple[ToolSignature, ...]:
    return signatures_of(granted(max_calls))


def front(source: str) -> FrontResult:
    return check_source(source, signatures())


@dataclass
class Ran:
    result: ExecResult
    stdout: str
    stderr: str
    caps: CapabilitySet
    runtime: DslRuntime | None
    plan: Plan | None


@functools.cache
def worker_native() -> NativeBackend:
    """One worker template for the DSL tests of this process (each backend shares it)."""
    native = NativeBackend(executor="dsl", pool_size=1)
    atexit.register(native.close)
    return native


def worker_backend(limits: DslLimits | None = None) -> DslBackend:
    """The ``dsl`` mode (in the confined worker) on the shared template."""
    return DslBackend(limits=limits, native=worker_native())


def run(
    source: str, tmp: Path, *, caps: CapabilitySet | None = None,
    backend: DslBackend | InProcessDslBackend | None = None, **limits: float,
) -> Ran:  # fmt: skip
    """Run ``source`` in one fresh session of ``backend`` (default: the worker's)."""
    caps = caps if caps is not None else granted()
    blobs = BlobStore(tmp / "blobs")
    workdir = tmp / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    session = (backend or worker_backend()).open(
        SessionSpec(blobs=blobs, tools=caps, workdir=workdir)
    )
    assert isinstance(session, DslSession | InProcessDslSession)
    try:
        request = ExecRequest(action_id="t", code=source, limits=Limits(**limits))  # type: ignore[arg-type]
        result = session.run(request)
    finally:
        session.close()
    return Ran(
        result=result,
        stdout=blobs.get(result.stdout).decode(),
        stderr=blobs.get(result.stderr).decode(),
        caps=caps,
        runtime=session.last_runtime if isinstance(session, InProcessDslSession) else None,
        plan=session.last_plan,
    )
