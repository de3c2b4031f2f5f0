"""The crawl of the data stack's views (worker mode): nothing that hands sandboxed code the
interpreter is reachable from numpy, pandas or matplotlib as restricted mode offers them."""

from __future__ import annotations

from safeexec.policy.loader import load_policy
from safeexec.restricted_proof.reachability import crawl

# What must never be reachable from the data views, even in the worker: the kinds that hand
# sandboxed code the interpreter itself. The crawl of the data stack is bounded (truncated: its
# surface is larger than the crawl's call budget) and run in the worker mode only; the kinds it
# may still report there are library state of the session's own process (class-level tables
# such as ``Line2D.markers``, caches pandas and pyplot fill lazily), behind the kernel layers.
ESCAPE_KINDS = frozenset(
    {
        "module",
        "frame",
        "code object",
        "traceback",
        "real builtins",
        "sys.modules",
        "runtime object",
        "globals dict",
        "metaclass",
        "dangerous class",
        "foreign function",
        "foreign globals",
        "module builtin",
        "unbound method",
        "sandbox namespace changed",
    }
)


def test_nothing_escape_critical_is_reachable_from_the_data_views() -> None:
    report = crawl(load_policy("default").imports.allow, counting=False, data_stack=True)
    assert report.objects > 10000 and report.calls > 100000
    assert [r for r in report.reached if r.kind in ESCAPE_KINDS] == []
