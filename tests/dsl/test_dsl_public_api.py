"""The public names of the DSL's modules are pinned."""

from __future__ import annotations

import importlib

import pytest

PINNED = {
    "safeexec.dsl.parser": [
        "MAX_DEPTH", "MAX_SOURCE_CHARS", "DslParseError", "forget_parses",
        "parse_expression", "parse_program",
    ],
    "safeexec.dsl.syntax_hints": ["KEYWORD_HINTS", "caret"],
    "safeexec.dsl.checker": ["CallSite", "Checked", "DslLimits", "check_program"],
    "safeexec.dsl.plan": ["Plan", "PlannedCall", "PlannedTool", "admit", "make_plan", "plan_of"],
    "safeexec.dsl.front": ["FrontResult", "check_source", "forget_checks"],
    "safeexec.dsl.limits": ["DslLimits"],
    "safeexec.dsl.compiler": ["CompiledShapeError", "compile_code", "compile_program"],
    "safeexec.sandbox.dsl_runtime": [
        "DslLimitError", "DslRuntime", "DslRuntimeError", "render_value",
    ],
    "safeexec.sandbox.dsl_executor": [
        "DslBounds", "DslCell", "DslExecutor", "new_runtime", "run_program",
    ],
    "safeexec.dsl.signatures": [
        "ToolSignature", "signature_of_descriptor", "signature_of_spec", "signatures_of",
    ],
    "safeexec.dsl.rules": ["DSL_RULES", "DslRule", "dsl_finding"],
    "safeexec.backends.dsl": [
        "DslBackend", "DslRejected", "DslSession", "InProcessDslBackend", "InProcessDslSession",
    ],
    "safeexec.policy.dsl_rules": ["DSL_RULES"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PINNED))
def test_public_names_are_pinned(module: str) -> None:
    loaded = importlib.import_module(module)
    assert loaded.__all__ == PINNED[module]
    assert all(hasattr(loaded, name) for name in loaded.__all__)
