"""Changing library state the whole process shares: ABC registries and class-level tables.

In the in-process variant the library modules are the host's own, so ``Mapping.register(list)``
or an item store into a class-level dict would change how the host itself behaves, long after the
run. Own classes keep ``register`` (their registry is their own).
"""

from __future__ import annotations

import collections
import collections.abc
import textwrap
import types
from pathlib import Path
from typing import TYPE_CHECKING

from safeexec.restricted import (
    DENIED_ATTRIBUTES,
    MODULE_ALLOWLISTS,
    RestrictedExecutor,
)
from safeexec.restricted.views import WorkerViews

if TYPE_CHECKING:
    from restricted_support import BoxFactory


def test_registering_a_library_abc_is_refused(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("collections", "collections.abc", "numbers", "abc"))
    for code in (
        "import collections.abc\ncollections.abc.Mapping.register(list)",
        "import numbers\nnumbers.Integral.register(str)",
        "import abc\ngetattr(abc.ABC, 'register')(int)",
        "import collections\ncollections.UserDict.register(list)",
    ):
        box.assert_refused(code, "'register'")
    assert not isinstance([], collections.abc.Mapping)
    box.assert_usable()


def test_own_abcs_can_still_register_own_classes(restricted_box: BoxFactory) -> None:
    """Only own classes: ``isinstance`` answers from the registry, and a library class passing
    for an own one was half of an escape (test_restricted_instance_dict_hooks.py)."""
    box = restricted_box(imports=("abc",))
    outcome = box.run(
        "import abc\nclass Shape(abc.ABC):\n    pass\nclass Square:\n    pass\n"
        "Shape.register(Square)\nprint(isinstance(Square(), Shape))"
    )
    assert outcome.stdout == "True\n", outcome.text
    box.assert_refused(
        "import abc\nclass Shape(abc.ABC):\n    pass\nShape.register(int)\n", "register"
    )


def test_the_shared_textwrap_table_is_read_only(restricted_box: BoxFactory) -> None:
    box = restricted_box(imports=("textwrap",))
    outcome = box.run(
        "import textwrap\n"
        "try:\n"
        "    textwrap.TextWrapper.unicode_whitespace_trans[32] = 88\n"
        "except TypeError as e:\n"
        "    print('refused', e)\n"
        "print(textwrap.TextWrapper(width=5).wrap('a\\tb c d'))"
    )
    assert outcome.stdout.startswith("refused"), outcome.text
    assert "['a', 'b c d']" in outcome.stdout, outcome.text
    assert textwrap.TextWrapper(width=3).wrap("a b c") == ["a b", "c"]


def test_no_shared_mutable_container_is_reachable_through_public_attributes(
    tmp_path: Path,
) -> None:
    """Item stores are plain bytecode: nothing public may lead to a dict, list or set the host
    shares (module-level containers are copied by the views; class-level ones are frozen)."""
    executor = RestrictedExecutor(
        imports=tuple(MODULE_ALLOWLISTS), workdir=tmp_path, views=WorkerViews
    )
    executor.execute(
        "import " + ", ".join(m for m in MODULE_ALLOWLISTS if m != "__future__"), filename="<t>"
    )
    builtins_table = executor._namespace["__builtins__"]
    assert isinstance(builtins_table, dict)
    roots = [*builtins_table.values(), *executor._views.values()]
    mutable = (dict, list, set, bytearray, collections.deque)
    seen: set[int] = set()
    queue = collections.deque((root, repr(root)[:40], 0) for root in roots)
    reached: list[str] = []
    while queue:
        obj, path, depth = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, mutable):
            reached.append(path)
            continue
        if depth >= 5:
            continue
        for name in dir(obj):
            if name.startswith("_") or name in DENIED_ATTRIBUTES:
                continue
            try:
                first, second = getattr(obj, name), getattr(obj, name)
            except Exception:
                continue
            if first is second:  # a fresh object per access is the code's own
                queue.append((first, f"{path}.{name}", depth + 1))
        if isinstance(obj, tuple) and len(obj) < 300:
            queue.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(obj))
        if isinstance(obj, types.MappingProxyType) and len(obj) < 300:
            queue.extend((v, f"{path}[{k!r}]", depth + 1) for k, v in obj.items())
    assert len(seen) > 1000
    assert reached == []
