"""``safeexec explain``: a rule's documentation, from the engine's, the DSL's or a pack's rules.

Its own module so that printing a rule loads the policy and nothing of the gate (see
``tests/cli/test_app.py``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from safeexec.cli.groups import usage_error
from safeexec.errors import PolicyError
from safeexec.policy.docs import render_rule
from safeexec.policy.dsl_rules import DSL_RULES
from safeexec.policy.engine_rules import ENGINE_RULES
from safeexec.policy.loader import load_policy
from safeexec.policy.network_rules import NETWORK_RULES

__all__ = ["explain"]


def explain(
    rule_id: Annotated[str, typer.Argument(help="A rule id such as SX201, or a rule name.")],
    policy: Annotated[
        str, typer.Option("--policy", help="Policy pack whose rules to search.")
    ] = "default",
) -> None:
    """Print a rule's documentation: what it does, why it is bad, an example, known bypasses.

    Exit status: 0 printed; 2 a usage or configuration error (no such rule or pack).
    """
    try:
        loaded = load_policy(policy)
    except PolicyError as exc:
        usage_error(str(exc))
    rules = {r.id: r for r in (*ENGINE_RULES, *DSL_RULES, *NETWORK_RULES, *loaded.rules)}
    wanted = rule_id.strip()
    rule = rules.get(wanted.upper()) or next(
        (r for r in rules.values() if r.name == wanted.lower()), None
    )
    if rule is None:
        known = ", ".join(sorted(rules))
        usage_error(f"no rule {rule_id!r} in policy {loaded.info.id!r}; known rules: {known}")
    typer.echo(render_rule(rule, policy_id=loaded.info.id))
