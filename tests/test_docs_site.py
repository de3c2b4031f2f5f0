"""The documentation's shape: a short README whose links resolve, an API page for every public
name, and every page in the site's navigation."""

from __future__ import annotations

import re
from pathlib import Path

import safeexec

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_readme_stays_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 10 * 1024
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert any(t.startswith("docs/") for t in targets)
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


def test_the_api_page_documents_every_public_name() -> None:
    page = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^::: safeexec\.(\w+)$", page, re.M))
    assert set(safeexec.__all__) - {"__version__"} <= documented
    assert "::: safeexec.service.client.Client" in page


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+(\S+\.md)$", config, re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    generated = {"reference/rule-catalogue.md"}
    assert pages | generated == listed
