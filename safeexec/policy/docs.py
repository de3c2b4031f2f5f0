"""Rule documentation, ruff-style: What it does / Why is this bad? / Example / Known bypasses."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from safeexec.policy.schema import Policy, Rule

__all__ = ["render_index", "render_rule", "write_rule_docs"]


def render_rule(rule: Rule, *, policy_id: str = "") -> str:
    """One rule's documentation page as Markdown."""
    lines = [f"# {rule.id} {rule.name}", ""]
    meta = [
        f"severity: {rule.severity.value}",
        f"enforcement: {rule.enforcement.value}",
        f"status: {rule.status.value}",
    ]
    if policy_id:
        meta.append(f"policy: {policy_id}")
    lines += [" · ".join(meta), ""]
    lines += ["## What it does", "", rule.description or rule.message, ""]
    lines += ["## Why is this bad?", "", rule.rationale or "(no rationale given)", ""]
    if rule.example:
        lines += ["## Example", "", "```python", rule.example.rstrip("\n"), "```", ""]
    lines += ["## Known bypasses", ""]
    lines += [f"- {b}" for b in rule.bypasses] if rule.bypasses else ["None known."]
    lines.append("")
    how = _how(rule)
    if how:
        lines += ["## How it matches", "", how, ""]
    if rule.references:
        lines += ["## References", "", *(f"- <{r}>" for r in rule.references), ""]
    return "\n".join(lines)


def _how(rule: Rule) -> str:
    if rule.check:
        return f"Registered check `{rule.check}`."
    match = rule.match
    if match is None:
        return ""
    parts = [f"`{match.kind.value}` match"]
    for label, values in (("names", match.names), ("allow", match.allow), ("deny", match.deny)):
        if values:
            parts.append(f"{label}: " + ", ".join(f"`{v}`" for v in values))
    if match.metric:
        parts.append(f"metric `{match.metric}`")
    if match.above is not None:
        parts.append(f"above {match.above:g}")
    if match.bound:
        parts.append(f"bound `{match.bound}`")
    if match.kind.value == "import" and not (match.allow or match.deny):
        parts.append("uses the policy's `[imports]` allow and deny lists")
    return "; ".join(parts) + "."


def render_index(rules: Iterable[Rule], *, title: str) -> str:
    """A Markdown table of rules linking to one page per rule."""
    lines = [f"# {title}", "", "| Rule | Name | Severity | Enforcement |", "|---|---|---|---|"]
    for rule in sorted(rules, key=lambda r: r.id):
        lines.append(
            f"| [{rule.id}]({rule.id}.md) | {rule.name} | {rule.severity.value} "
            f"| {rule.enforcement.value} |"
        )
    return "\n".join(lines) + "\n"


def write_rule_docs(policy: Policy, directory: Path, *, extra: Iterable[Rule] = ()) -> list[Path]:
    """Write one page per rule of ``policy`` (and ``extra`` engine rules) plus ``README.md``."""
    directory.mkdir(parents=True, exist_ok=True)
    rules = {r.id: r for r in [*extra, *policy.rules]}
    written = []
    for rule in rules.values():
        path = directory / f"{rule.id}.md"
        path.write_text(render_rule(rule, policy_id=policy.info.id), encoding="utf-8")
        written.append(path)
    index = directory / "README.md"
    index.write_text(
        render_index(rules.values(), title=f"Rules of policy {policy.info.id}"), encoding="utf-8"
    )
    written.append(index)
    return written
