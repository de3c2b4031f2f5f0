"""The policy schema: frozen values a TOML pack is loaded into (see :mod:`safeexec.policy.loader`).

Every section has defaults, so ``Policy()`` is the most restrictive usable policy: no imports,
no capabilities, no rules beyond the engine's built-in gates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from safeexec.dsl.limits import DslLimits
from safeexec.egress.network_policy import NetworkPolicy
from safeexec.model.fieldwise import Fieldwise
from safeexec.model.values import Enforcement, Limits, Severity

__all__ = [
    "ApprovalConfig",
    "BackendsConfig",
    "BudgetConfig",
    "CapabilityConfig",
    "ImportsConfig",
    "MatchKind",
    "ObserveConfig",
    "Policy",
    "PolicyInfo",
    "Rule",
    "RuleMatch",
    "RuleStatus",
    "SandboxConfig",
]


class RuleStatus(StrEnum):
    STABLE = "stable"
    PREVIEW = "preview"


class MatchKind(StrEnum):
    IMPORT = "import"
    CALL = "call"
    ATTRIBUTE = "attribute"
    NAME = "name"
    NODE = "node"
    ESTIMATE = "estimate"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class PolicyInfo(Fieldwise):
    """Who the policy is: its id, version, description and owners (the ``[policy]`` table)."""

    id: str = "builtin-deny-all"
    version: str = "0"
    description: str = ""
    owners: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class BackendsConfig(Fieldwise):
    """Which execution modes a policy admits and which confinement layers it requires.

    ``rung`` is the weakest rung of the confinement ladder (full, container, unprivileged,
    minimal) on which the modes that run code in the confined worker (native, restricted) may
    run; None accepts any.
    """

    allowed: tuple[str, ...] = ("native", "restricted")
    default: str = "native"
    require: tuple[str, ...] = ()
    rung: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ImportsConfig(Fieldwise):
    """Module allowlist/denylist; entries may end in ``.*`` to cover submodules.

    ``allow`` holds in every mode; ``native_allow`` adds modules only the ``native`` mode may
    import (they run there behind the kernel layers; ``restricted`` has no view of them).
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    native_allow: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class CapabilityConfig(Fieldwise):
    """May ``tool`` be granted, and how narrowly."""

    tool: str
    grantable: bool = True
    max_calls: int | None = None
    scopes: tuple[str, ...] = ()
    requires_approval: bool = False


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ApprovalConfig(Fieldwise):
    """Effects (``read``, ``write``, ``network``, ``money``) whose tools need approval in every
    mode: each call asks the tool approver, and a DSL plan that may call one asks the step's
    approver first, with the plan (``SX710``)."""

    effects: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class ObserveConfig(Fieldwise):
    """Budgets of the observation handed to the model."""

    max_bytes: int = 4096
    max_lines: int = 80
    max_line_chars: int = 500


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class BudgetConfig(Fieldwise):
    """The session's double budget: agent steps and execution resources."""

    steps: int = 50
    cpu_seconds: float = 120.0
    tool_calls: int = 200


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class SandboxConfig(Fieldwise):
    """What the sandbox gets from the host beyond the defaults.

    ``env_passthrough``: host environment variable names passed in (nothing else is).
    ``workdir_symlinks``: let native code make symbolic links in the workdir (Landlock's
    ``MAKE_SYM``). Off by default: a planted link is the first step of every race against host
    code that opens paths there; tools and the restricted ``open`` never follow links anyway.
    """

    env_passthrough: tuple[str, ...] = ()
    workdir_symlinks: bool = False


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class RuleMatch(Fieldwise):
    """The closed ``match`` vocabulary of a rule; which fields apply depends on ``kind``."""

    kind: MatchKind
    names: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    metric: str = ""
    above: float | None = None
    bound: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Rule(Fieldwise):
    """One rule; ``description``/``rationale``/``example``/``bypasses`` are its documentation
    ("What it does / Why is this bad? / Example / Known bypasses"); ``source`` is where it was set.
    """

    id: str
    name: str
    severity: Severity
    enforcement: Enforcement
    message: str
    status: RuleStatus = RuleStatus.STABLE
    rationale: str = ""
    references: tuple[str, ...] = ()
    match: RuleMatch | None = None
    check: str | None = None
    description: str = ""
    example: str = ""
    bypasses: tuple[str, ...] = ()
    remedy: str = ""  # what would make refused code run; appended to the finding's message
    modes: tuple[str, ...] = ()
    source: str = ""

    def applies_in(self, mode: str) -> bool:
        """Whether this rule is in force in execution ``mode`` (no ``modes``: in every mode)."""
        return not self.modes or mode in self.modes


@dataclass(frozen=True, slots=True, kw_only=True, eq=False, repr=False)
class Policy(Fieldwise):
    """A loaded, merged policy pack; ``digest`` is the sha256 of its canonical form."""

    info: PolicyInfo = field(default_factory=PolicyInfo)
    limits: Limits = field(default_factory=Limits)
    backends: BackendsConfig = field(default_factory=BackendsConfig)
    imports: ImportsConfig = field(default_factory=ImportsConfig)
    capabilities: tuple[CapabilityConfig, ...] = ()
    observe: ObserveConfig = field(default_factory=ObserveConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    approval: ApprovalConfig = field(default_factory=ApprovalConfig)
    dsl: DslLimits = field(default_factory=DslLimits)
    network: NetworkPolicy = field(default_factory=NetworkPolicy)
    rules: tuple[Rule, ...] = ()
    sources: tuple[str, ...] = ()
    digest: str = ""
