"""MkDocs hook: the pages generated from the code at build time.

``reference/rule-catalogue.md``: every rule id of the engine and of every shipped pack, rendered by
``safeexec.policy.docs`` (what ``safeexec policy docs`` writes). ``reference/http.md``: the
``<!-- openapi -->`` marker becomes the paths of ``safeexec/service/openapi.json``.
``reference/cli.md``: the ``<!-- cli-help -->`` marker becomes every command's ``--help``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import resources
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from safeexec.policy.docs import render_rule
from safeexec.policy.dsl_rules import DSL_RULES
from safeexec.policy.engine_rules import ENGINE_RULES
from safeexec.policy.loader import load_policy
from safeexec.policy.network_rules import NETWORK_RULES
from safeexec.policy.packs import shipped_packs
from safeexec.policy.schema import Rule

CATALOGUE = "reference/rule-catalogue.md"
OPENAPI_MARKER = "<!-- openapi -->"
CLI_MARKER = "<!-- cli-help -->"
_SUBCOMMAND = re.compile(r"^  (\S+)  ", re.M)


def rule_catalogue() -> str:
    """One page with every rule id: the engine's, then each shipped pack's, each documented once."""
    rules: dict[str, Rule] = {}
    carried: dict[str, list[str]] = {}
    for rule in (*ENGINE_RULES, *DSL_RULES, *NETWORK_RULES):
        rules.setdefault(rule.id, rule)
        carried.setdefault(rule.id, []).append("engine")
    for pack in shipped_packs():
        for rule in load_policy(pack).rules:
            rules.setdefault(rule.id, rule)
            if pack not in carried.setdefault(rule.id, []):
                carried[rule.id].append(pack)
    lines = [
        "# Rule catalogue",
        "",
        "Generated from the code at build time: the engine's rules and those of every shipped",
        f"pack ({', '.join(shipped_packs())}). `safeexec explain ID` prints one of them;",
        "`safeexec policy docs --policy PACK --out DIR` writes a pack's pages.",
        "",
        "| Rule | Name | Severity | Enforcement | Carried by |",
        "|---|---|---|---|---|",
    ]
    ordered = sorted(rules.values(), key=lambda r: r.id)
    for rule in ordered:
        lines.append(
            f"| [{rule.id}](#{rule.id.lower()}) | {rule.name} | {rule.severity.value} "
            f"| {rule.enforcement.value} | {', '.join(carried[rule.id])} |"
        )
    lines.append("")
    for rule in ordered:
        page = render_rule(rule).replace("\n## ", "\n### ")
        title, _, body = page.partition("\n")
        lines += [f"## {rule.id} {{#{rule.id.lower()}}}", "", f"**{title[2:]}**", body, ""]
    return "\n".join(lines)


def _schema_name(content: dict[str, Any]) -> str:
    """The component a request or response body refers to, as a link, or ``""``."""
    ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
    name = ref.rpartition("/")[2]
    return f" ([`{name}`](#{name.lower()}))" if name else ""


def openapi_markdown() -> str:
    """The OpenAPI document as Markdown: each path's operations and responses, then the schemas."""
    spec = json.loads(
        resources.files("safeexec.service").joinpath("openapi.json").read_text(encoding="utf-8")
    )
    info = spec.get("info", {})
    lines = [
        f"OpenAPI {spec.get('openapi', '')}: **{info.get('title', '')}** {info.get('version', '')}",
        "",
    ]
    for path, operations in spec["paths"].items():
        lines += [f"## `{path}`", ""]
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            lines += [f"### {method.upper()} `{path}`", ""]
            if operation.get("description"):
                lines += [operation["description"].strip(), ""]
            body = operation.get("requestBody", {}).get("content", {})
            if body:
                lines += [f"Request body{_schema_name(body)}.", ""]
            for status, response in operation["responses"].items():
                schema = _schema_name(response.get("content", {}))
                lines.append(f"- `{status}`: {response.get('description', '')}{schema}")
            lines.append("")
    lines += ["## Schemas", ""]
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        lines += [f"### {name} {{#{name.lower()}}}", ""]
        if schema.get("description"):
            lines += [schema["description"].strip(), ""]
        required = set(schema.get("required", ()))
        for prop, detail in schema.get("properties", {}).items():
            kind = detail.get("type") or detail.get("$ref", "").rpartition("/")[2] or "any"
            flag = " (required)" if prop in required else ""
            lines.append(f"- `{prop}`: {kind}{flag}")
        lines.append("")
    return "\n".join(lines)


def _help(path: list[str]) -> str:
    """``safeexec PATH --help`` as a user's terminal shows it, in plain text."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from safeexec.cli.app import app; app(prog_name='safeexec')",
            *path,
            "--help",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "TYPER_USE_RICH": "0", "COLUMNS": "100"},
    )
    return done.stdout


def cli_markdown(path: list[str] | None = None) -> str:
    """Every command's help, the root's first, each group's commands after it."""
    path = path or []
    text = _help(path)
    title = " ".join(["safeexec", *path])
    lines = [f"### `{title}`", "", "```text", text.rstrip("\n"), "```", ""]
    _, _, commands = text.partition("\nCommands:\n")
    for name in _SUBCOMMAND.findall(commands.split("\n\n", 1)[0]):
        lines.append(cli_markdown([*path, name]))
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated rule catalogue."""
    files.append(File.generated(config, CATALOGUE, content=rule_catalogue()))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Any) -> str:
    """Fill the HTTP reference's marker from the OpenAPI document, the CLI's from its help."""
    if OPENAPI_MARKER in markdown:
        return markdown.replace(OPENAPI_MARKER, openapi_markdown())
    if CLI_MARKER in markdown:
        return markdown.replace(CLI_MARKER, cli_markdown())
    return markdown
