"""No import cycle between safeexec's modules (runtime imports: ``if TYPE_CHECKING:`` blocks do
not count, function-local imports do).

A cycle makes two modules one, split over two files. The cycles known today are listed with the
issue that breaks them; a new one fails, and so does a listed one that is gone (strike it).
"""

from __future__ import annotations

import grimp

# None: a new cycle fails here (add it only with the plan that breaks it).
KNOWN: set[frozenset[str]] = set()


def _cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append(
                        (target, iter(sorted(graph.find_modules_directly_imported_by(target))))
                    )
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p.c", imported="p.d")
    assert _cycles(graph) == {frozenset({"p.a", "p.b", "p.c"})}


def test_no_import_cycle_but_the_known_ones() -> None:
    graph = grimp.build_graph("safeexec", exclude_type_checking_imports=True, cache_dir=None)
    assert _cycles(graph) == KNOWN
