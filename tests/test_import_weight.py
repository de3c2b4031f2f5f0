"""What the sandbox's entry points and the static gate load, each in a clean interpreter.

The guarantees the remaining function-local imports protect, stated once:

* The **worker** (``safeexec.sandbox.worker``) and its **template** (``safeexec.sandbox.zygote``)
  start before every session, inside the confinement: they load none of the host's pipeline —
  no parser (libcst), no DSL front end (lark and its checker: the host parses, checks and
  compiles), no RestrictedPython (a restricted cell loads it when it first runs), no policy,
  session, backend or tool layer.
* **check** (``safeexec.gate.check``, what ``safeexec check`` and the policy-test runner call)
  runs nothing, so it loads no runtime: no session, backend, service or face, no worker or
  template, no restricted executor, guards or RestrictedPython, no DSL front end for Python
  code, no observation step, no tool layer (sockets, ctypes), no asyncio and, for ASCII code,
  no libcst (the parser cross-check loads it only for text the two parsers may read apart).
* The **session** (``safeexec.session.session``, the composition root) loads a backend, the
  DSL, the tool-call approval of DSL plans, the grant reconciliation and asyncio only when a
  step (or a grant) needs them: a one-shot Python run never pays for them.
* The **native backend** (``safeexec.backends.native.backend``) loads its session's modules at
  its first open: ``safeexec run`` starts the template first, and they load while it boots.
"""

from __future__ import annotations

import json
import subprocess
import sys

_NOT_IN_THE_WORKER = (
    "libcst",
    "lark",
    "RestrictedPython",
    "safeexec.dsl.front",
    "safeexec.dsl.checker",
    "safeexec.dsl.parser",
    "safeexec.policy",
    "safeexec.session",
    "safeexec.backends",
    "safeexec.gate",
    "safeexec.analysis",
    "safeexec.parse",
    "safeexec.capabilities.gateway",
    "safeexec.capabilities.specs",
    "safeexec.capabilities.targets",
)

_NOT_FOR_CHECKING = (
    "safeexec.session",
    "safeexec.backends",
    "safeexec.service",
    "safeexec.faces",
    "safeexec.harness",
    "safeexec.sandbox.worker",
    "safeexec.sandbox.zygote",
    "safeexec.sandbox.confine",
    "safeexec.sandbox.python_executor",
    "safeexec.restricted.executor",
    "safeexec.restricted.guards",
    "safeexec.restricted.transformer",
    "RestrictedPython",
    "libcst",
    "lark",
    "safeexec.dsl.front",
    "safeexec.dsl.checker",
    "safeexec.dsl.approval",
    "safeexec.observe",
    "safeexec.capabilities.gateway",
    "safeexec.capabilities.specs",
    "safeexec.capabilities.targets",
    "asyncio",
)

_NOT_FOR_A_SESSION = (
    "asyncio",
    "lark",
    "libcst",
    "RestrictedPython",
    "safeexec.dsl.front",
    "safeexec.dsl.approval",
    "safeexec.policy.grants",
    "safeexec.backends.native",
    "safeexec.backends.restricted",
    "safeexec.restricted.executor",
)


def _loaded(probe: str) -> set[str]:
    """``sys.modules`` after ``probe`` ran in a fresh, isolated interpreter."""
    script = f"{probe}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-I", "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(loaded: set[str], absent: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if m in absent or m.startswith(tuple(f"{a}." for a in absent)))


def test_the_worker_and_its_template_load_none_of_the_host_pipeline() -> None:
    loaded = _loaded("import safeexec.sandbox.worker, safeexec.sandbox.zygote")
    assert {"safeexec.sandbox.worker", "safeexec.sandbox.zygote"} <= loaded
    assert _heavy(loaded, _NOT_IN_THE_WORKER) == []


def test_check_loads_no_runtime() -> None:
    probe = (
        "from safeexec.gate import check\n"
        "from safeexec.policy.loader import load_policy\n"
        "policy = load_policy('default')\n"
        "for mode in ('native', 'restricted'):\n"
        "    assert check('import math\\nprint(math.sqrt(2))\\n', policy, backend=mode).decision"
        ".allowed\n"
    )
    loaded = _loaded(probe)
    assert "safeexec.gate" in loaded and "safeexec.decide" in loaded
    assert _heavy(loaded, _NOT_FOR_CHECKING) == []


def test_the_session_loads_backends_the_dsl_and_asyncio_only_when_used() -> None:
    loaded = _loaded("import safeexec.session.session")
    assert "safeexec.session.session" in loaded
    assert _heavy(loaded, _NOT_FOR_A_SESSION) == []


def test_the_native_backend_loads_its_sessions_modules_at_the_first_open() -> None:
    loaded = _loaded("import safeexec.backends.native.backend")
    assert "safeexec.backends.native.backend" in loaded
    session = ("safeexec.backends.native.native_session", "safeexec.backends.native.call")
    assert _heavy(loaded, session) == []
