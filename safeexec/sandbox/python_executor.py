"""How the worker runs one cell of code: the ``Executor`` seam and the plain-Python executor.

The worker owns the channel, output capture and tracebacks; an executor only turns source text
into effects on its own persistent namespace. ``PythonExecutor`` is plain ``exec``; the restricted
mode plugs ``RestrictedExecutor`` (``safeexec.restricted``) into the same worker.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Protocol

__all__ = ["Executor", "PythonExecutor", "split_final_expression"]


class Executor(Protocol):
    """Runs cells in a persistent namespace, like a notebook kernel."""

    def execute(self, code: str, *, filename: str) -> str | None:
        """Run ``code``; return the repr text of a final expression (``None`` if there is none
        or its value is ``None``). User exceptions propagate unchanged; output goes to
        ``sys.stdout``/``sys.stderr``. ``SyntaxError`` is raised for code that does not compile."""
        ...

    def reset(self) -> None:
        """Forget every variable and import; tools stay bound."""
        ...

    def bind_tools(self, tools: Mapping[str, Callable[..., object]]) -> None:
        """Make ``tools`` callable by name from user code (now and after every ``reset``)."""
        ...


def split_final_expression(tree: ast.Module) -> tuple[ast.Module, ast.Expression | None]:
    """Split a module into its body and a trailing expression statement, if it ends with one."""
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        body = ast.Module(body=tree.body[:-1], type_ignores=tree.type_ignores)
        return body, ast.Expression(body=last.value)
    return tree, None


class PythonExecutor:
    """Plain CPython ``exec`` in one persistent ``__main__``-like namespace.

    ``last_value`` is the value of the last cell's final expression (``None`` if none), for the
    worker to render as a rich result.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Callable[..., object]] = {}
        self._namespace: dict[str, object] = {}
        self.last_value: object = None
        self.reset()

    def reset(self) -> None:
        self._namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        self._namespace.update(self._tools)

    def bind_tools(self, tools: Mapping[str, Callable[..., object]]) -> None:
        self._tools = dict(tools)
        self._namespace.update(self._tools)

    def execute(self, code: str, *, filename: str) -> str | None:
        self.last_value = None
        tree = ast.parse(code, filename=filename, mode="exec")
        body, final = split_final_expression(tree)
        exec(compile(body, filename, "exec"), self._namespace)
        if final is None:
            return None
        value = eval(compile(final, filename, "eval"), self._namespace)
        if value is None:
            return None
        self._namespace["_"] = self.last_value = value
        return repr(value)
