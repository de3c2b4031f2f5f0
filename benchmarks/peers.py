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
    """A new isolated interpreter per call: ``python -S -I -c code`` (no container). Without
    ``site``: this checkout's editable install would add its import hook's ~10 ms to every
    start, which a harness's installed interpreter does not pay (so the peer is, if anything,
    a little faster than one that runs ``site``)."""
    argv = [sys.executable, "-S", "-I", "-c", code]

    def run() -> object:
        return subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)

    return run


def smolagents_executor(*, timeout: bool = True) -> Callable[[str], object]:
    """smolagents' ``LocalPythonExecutor`` with its defaults and its tools sent once, as a
    ``CodeAgent`` keeps one for its steps. A call parses its source (the executor runs source
    only) and, by default, waits on a new worker thread that enforces its wall-time limit;
    ``timeout=False`` sets ``timeout_seconds=None`` (no thread)."""
    from smolagents.local_python_executor import LocalPythonExecutor

    options: dict[str, Any] = {} if timeout else {"timeout_seconds": None}
    executor = LocalPythonExecutor(
        additional_authorized_imports=[], max_print_outputs_length=10**6, **options
    )
    executor.send_tools({})
    return executor


def smolagents_runner(code: str) -> Runner:
    """``code`` run by one :func:`smolagents_executor`, every run."""
    executor = smolagents_executor()
    return lambda: executor(code)


def smolagents_untimed_runner(code: str) -> Runner:
    """:func:`smolagents_runner` without the thread per run (``timeout=False``), which a
    restricted executor has no counterpart of (its wall limit is the session's watchdog)."""
    executor = smolagents_executor(timeout=False)
    return lambda: executor(code)


def asteval_runner(code: str) -> Runner:
    """asteval's ``Interpreter`` (its default symbol table), one per runner, running ``code``
    parsed once (``parse`` then ``run``); asteval has no classes."""
    import ast

    from asteval import Interpreter

    if any(isinstance(node, ast.ClassDef) for node in ast.walk(ast.parse(code))):
        raise Unsupported("asteval does not support class definitions")
    interpreter = Interpreter(max_statement_length=10**7)
    tree = interpreter.parse(code)

    def run() -> object:
        interpreter.run(tree, with_raise=True)
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
    default guarded ``getiter``/``getitem``, ``guarded_iter_unpack_sequence``); ``code``
    compiled once, each run in the same namespace; no operation or time budget, no OS
    confinement."""
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

    def run() -> object:
        exec(compiled, namespace)
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
