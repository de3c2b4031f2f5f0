"""The restricted runtime: RestrictedPython, one ``Guards`` object, attribute-allowlisted imports.

This package is the **core** (transformer, guards, allowlist, receivers, budget, executor, the
pure wrappers of derived stdlib modules and the one file mediator, ``workdir_files``);
:mod:`safeexec.restricted.views` holds the hand-built module views, which receive a narrow
:class:`~safeexec.restricted.cell.Cell` and run only in the confined worker (the core never
imports them: the worker hands the executor its ``WorkerViews``). The proof of the fast path's
premises, the reachability crawl, is host-side only (:mod:`safeexec.restricted_proof`).

Sandboxed code is transformed by :class:`SafeexecTransformer` (RestrictedPython's
``RestrictingNodeTransformer``, the heart of ``compile_restricted``, compiled without inheriting
``compile_restricted``'s ``from __future__ import annotations``), which keeps RestrictedPython's
default-deny grammar and closes its compatibility gaps where that is safe:

* attribute names are checked **at compile time**. A plain ``a.b`` whose name is public and not on
  the dangerous list compiles to a direct attribute load when ``a`` is not a class (one inline
  ``isinstance`` test, or the ``_cattr_`` hook for a receiver that is not a name); read off a
  class, a ``super`` object or a generic alias, a library method comes back receiver-checked
  (``Counter.copy(OwnClass)`` would run host code on a foreign ``self``), and augmented
  assignments and ``match`` patterns, which read attributes with the interpreter's own getattr,
  take the same guard;
  names starting with ``_`` and dangerous names (``format``, ``format_map``, ``mro``, frame and code
  attributes…) compile to a ``_getattr_`` call that only allows them on objects the code created;
* attribute writes go through ``_write_``, which only admits objects of classes the code defined;
* the code's own classes may define ordinary dunder methods (``__repr__``, ``__eq__``,
  ``__iter__``, ``__enter__``…), read and write ``self._x``, use annotated assignments (dataclass
  fields), augmented assignment on subscripts and attributes, and ``nonlocal``;
* ``import`` hands out :class:`ModuleView` wrappers with an explicit attribute allowlist, never a
  real module, and only for modules in both the policy allowlist and :data:`MODULE_ALLOWLISTS`.

Item access, iteration, unpacking and in-place operators stay plain bytecode (RestrictedPython's
``_getitem_``, ``_getiter_``, ``_unpack_sequence_`` and ``_inplacevar_`` hooks are not used): with
attribute access checked, imports wrapped and no module-holding container reachable, those hooks
would only re-check values the code can already hold, at a guard call per element.

Nothing that reaches a module object through a public attribute is exposed (the crawl of
``safeexec.restricted_proof`` walks the reachable object graph to check that premise of the fast
path). When ``count_operations`` is on, every loop iteration, comprehension step and function call
draws from an :class:`OperationBudget`, so ``while True: pass`` stops in-process. C-level consumers
(``sum``, ``list``, ``x in it``) run no Python code between items, so what they consume counts
instead: long ranges, endless or combinatorial ``itertools`` producers and ``iter(callable,
sentinel)`` draw one operation per item. Single C operations (``"x" * 10**10``,
``math.factorial(10**8)``, big-integer arithmetic, a backtracking regular expression) and library
code written in Python (``difflib``) still cannot be interrupted in-process, which is why the
default home of this runtime is the confined worker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from safeexec.restricted.allowlist import (
        DENIED_ATTRIBUTES,
        MODULE_ALLOWLISTS,
        USER_DUNDERS,
    )
    from safeexec.restricted.budget import OperationBudget
    from safeexec.restricted.cell import Cell
    from safeexec.restricted.executor import RestrictedExecutor
    from safeexec.restricted.guards import (
        GuardError,
        Guards,
        ModuleView,
        PrintCollector,
        SandboxExit,
        TextSink,
    )
    from safeexec.restricted.transformer import CountingTransformer, SafeexecTransformer
    from safeexec.restricted.workdir_files import WorkdirFile

# Loaded on first use: the host's static gate reads the allowlist tables only, and must not pay
# for RestrictedPython and the runtime (``safeexec check`` imports no sandbox runtime).
_HOMES = {
    "DENIED_ATTRIBUTES": "allowlist",
    "MODULE_ALLOWLISTS": "allowlist",
    "USER_DUNDERS": "allowlist",
    "OperationBudget": "budget",
    "Cell": "cell",
    "RestrictedExecutor": "executor",
    "GuardError": "guards",
    "Guards": "guards",
    "ModuleView": "guards",
    "PrintCollector": "guards",
    "SandboxExit": "guards",
    "TextSink": "guards",
    "CountingTransformer": "transformer",
    "SafeexecTransformer": "transformer",
    "WorkdirFile": "workdir_files",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "DENIED_ATTRIBUTES",
    "MODULE_ALLOWLISTS",
    "USER_DUNDERS",
    "Cell",
    "CountingTransformer",
    "GuardError",
    "Guards",
    "ModuleView",
    "OperationBudget",
    "PrintCollector",
    "RestrictedExecutor",
    "SafeexecTransformer",
    "SandboxExit",
    "TextSink",
    "WorkdirFile",
]
