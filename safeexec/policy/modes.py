"""What a pack means in each execution mode: the import allowlist in force and the rules that apply.

One allowlist, two enforcers: the static gate reads a mode's imports from :func:`mode_imports`,
and the restricted runtime imports exactly ``restricted_modules`` (restricted.allowlist)
of the same ``[imports] allow`` list, so ``check`` and ``run`` cannot disagree about a module.
"""

from __future__ import annotations

from safeexec.policy.schema import ImportsConfig
from safeexec.restricted.allowlist import module_matches, restricted_modules

__all__ = ["DSL_MODES", "explicitly_allowed", "mode_imports", "module_matches"]

# The modes whose text is a DSL program (checked, planned and compiled in the host): ``dsl`` runs
# it in the confined worker, the opt-in ``dsl-inprocess`` in the host process.
DSL_MODES = frozenset({"dsl", "dsl-inprocess"})


def mode_imports(imports: ImportsConfig, mode: str) -> tuple[str, ...]:
    """The import allowlist in force in ``mode``.

    ``native``: ``allow`` plus ``native_allow``. ``restricted``: the modules of ``allow`` that have
    a restricted module view (anything else could never be imported there);
    ``restricted-inprocess``: those with a view in the host process (no data stack). Any other
    mode (the test fake): ``allow``.
    """
    if mode == "native":
        return (*imports.allow, *imports.native_allow)
    if mode == "restricted":
        return restricted_modules(imports.allow)
    if mode == "restricted-inprocess":
        return restricted_modules(imports.allow, in_process=True)
    return imports.allow


def explicitly_allowed(module: str, allow: tuple[str, ...]) -> bool:
    """Whether ``allow`` names ``module`` itself (``os``) or a package of it (``os.*``).

    An explicit entry is how a pack extending another overrides a rule's own deny list; the
    wildcard ``*`` never counts, so a broadened allowlist cannot admit a denied module.
    """
    return module_matches(module, tuple(entry for entry in allow if entry != "*"))
