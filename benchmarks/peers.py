"""What a user would pick instead of safeexec, each run the way its documentation shows.

Installed by the ``bench`` extra (``make bench``): AST interpreters (smolagents'
``LocalPythonExecutor``, asteval), stock RestrictedPython with its documented guards, a Jupyter
kernel (stateful sessions), and a fresh interpreter per call (the subprocess-per-call harnesses,
such as codejail or llm-sandbox without containers). bandit, the static peer, is measured by
``bench_check.py``. A peer that is missing raises ``ImportError``: the bench extra is required.
"""

from __future__ import annotations

import operator
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

Runner = Callable[[], object]


class Unsupported(Exception):
    """The peer cannot run this program at all (a language feature it lacks)."""


def fresh_interpreter(code: str) -> Runner:
    """A new isolated interpreter per call: ``python -I -c code`` (no container)."""
    argv = [sys.executable, "-I", "-c", code]

    def run() -> object:
        return subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

    return run


def smolagents_runner(code: str) -> Runner:
    """smolagents' ``LocalPythonExecutor`` on ``code``, a fresh executor per run (as an agent
    step makes one per task), with its default safety limits."""
    from smolagents.local_python_executor import LocalPythonExecutor

    def run() -> object:
        executor = LocalPythonExecutor(
            additional_authorized_imports=[], max_print_outputs_length=10**6
        )
        executor.send_tools({})
        return executor(code)

    return run


def asteval_runner(code: str) -> Runner:
    """asteval's ``Interpreter`` (its default symbol table) on ``code``; asteval has no classes."""
    import ast

    from asteval import Interpreter

    if any(isinstance(node, ast.ClassDef) for node in ast.walk(ast.parse(code))):
        raise Unsupported("asteval does not support class definitions")

    def run() -> object:
        interpreter = Interpreter(max_statement_length=10**7)
        interpreter(code, raise_errors=True)
        return interpreter.symtable

    return run


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
}


def _inplacevar(op: str, target: Any, value: Any) -> Any:
    return _INPLACE[op](target, value)


def stock_restricted_runner(code: str) -> Runner:
    """Stock RestrictedPython as its documentation shows: ``compile_restricted`` and
    ``safe_globals`` with the documented guards (``safer_getattr``, ``full_write_guard``, the
    default guarded ``getiter``/``getitem``, ``guarded_iter_unpack_sequence``), compiled afresh
    each run like a new submission; no operation or time budget, no OS confinement."""
    from RestrictedPython import compile_restricted, safe_globals
    from RestrictedPython.Eval import default_guarded_getitem, default_guarded_getiter
    from RestrictedPython.Guards import (
        full_write_guard,
        guarded_iter_unpack_sequence,
        safer_getattr,
    )

    try:
        compiled = compile_restricted(code, "<bench>", "exec")
    except SyntaxError as exc:
        raise Unsupported(f"RestrictedPython refuses it: {exc}") from exc
    del compiled  # each run compiles again, as a new submission would

    def run() -> object:
        namespace: dict[str, Any] = dict(safe_globals)
        namespace.update(
            __name__="restricted",
            __metaclass__=type,
            _getattr_=safer_getattr,
            _write_=full_write_guard,
            _getiter_=default_guarded_getiter,
            _getitem_=default_guarded_getitem,
            _iter_unpack_sequence_=guarded_iter_unpack_sequence,
            _inplacevar_=_inplacevar,
        )
        exec(compile_restricted(code, "<bench>", "exec"), namespace)
        return namespace

    return run


class JupyterKernel:
    """One IPython kernel through ``jupyter_client`` (ZMQ on loopback), as notebook-style code
    interpreters keep one per conversation."""

    def __init__(self, scratch: str) -> None:
        from jupyter_client.manager import KernelManager

        started = time.perf_counter()
        # IPC sockets in a scratch directory: no TCP port at all.
        self.manager = KernelManager(
            kernel_name="python3", transport="ipc", ip=os.path.join(scratch, "kernel")
        )
        self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.start_seconds = time.perf_counter() - started

    def execute(self, code: str) -> None:
        reply = self.client.execute_interactive(code, timeout=60, output_hook=lambda _msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the kernel failed on {code!r}: {reply['content']}")

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
