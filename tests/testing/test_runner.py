"""Every shipped pack's own tests pass, and the runner fails what it must fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from safeexec.gate import check
from safeexec.model.values import Action
from safeexec.policy.loader import load_policy
from safeexec.policy.packs import packs_root, shipped_packs
from safeexec.testing import run_pack_tests
from safeexec.testing.runner import split_cases

pytest_plugins = ["pytester"]

EVAL_RULE = """
[[rule]]
id = "TM301"
name = "no-eval"
severity = "high"
enforcement = "deny"
message = "`{name}` runs code"
rationale = "eval runs code the checker never saw"
description = "Denies eval."
example = "eval('1')"
match = { kind = "call", names = ["eval"] }
"""


def _pack(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "team-pack"
    directory.mkdir()
    for name, text in files.items():
        (directory / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return directory


def _messages(directory: Path) -> list[str]:
    return [f.message for f in run_pack_tests(directory).failures]


@pytest.mark.parametrize("pack", ["default", "strict", "data-analysis"])
def test_shipped_pack_tests_pass(pack: str) -> None:
    assert pack in shipped_packs()
    report = run_pack_tests(pack)
    assert report.failures == []
    assert report.cases >= 5 and report.annotations >= 10


def test_default_pack_covers_the_classic_escape_routes() -> None:
    text = "\n".join(p.read_text() for p in (packs_root() / "default").glob("*.cases.py"))
    routes = [
        "__subclasses__", "__globals__", "__builtins__", "__code__", "gi_frame", "f_back",
        "tb_frame", "cr_frame", 'getattr((), "__cla" + "ss__")', '__import__("p" + "ty")',
        "vars()", "globals()", "@eval", "runner=exec", ":=", "{x:{x.__class__}}",
        '"{0.__class__.__base__}".format', "lambda", "for b in", "pathlib.os",
        "sys._getframe", "sys.modules",
    ]  # fmt: skip
    for route in routes:
        assert route in text, route


def test_a_pack_without_tests_fails(tmp_path: Path) -> None:
    directory = _pack(tmp_path, {"policy.toml": EVAL_RULE})
    assert any("no tests" in m for m in _messages(directory))


def test_a_pack_whose_test_files_hold_no_cases_fails(tmp_path: Path) -> None:
    directory = _pack(tmp_path, {"policy.toml": EVAL_RULE, "empty.cases.py": ""})
    assert any("hold no cases" in m for m in _messages(directory))


def test_a_rule_without_expect_and_ok_cases_fails(tmp_path: Path) -> None:
    directory = _pack(
        tmp_path, {"policy.toml": EVAL_RULE, "a.cases.py": "eval('1')  # expect: TM301\n"}
    )
    (message,) = _messages(directory)
    assert "TM301" in message and "no ok case" in message


def test_a_complete_pack_passes(tmp_path: Path) -> None:
    directory = _pack(
        tmp_path,
        {
            "policy.toml": EVAL_RULE,
            "a.cases.py": "eval('1')  # expect: TM301\nprint('1')  # ok: TM301\n",
        },
    )
    assert _messages(directory) == []


def test_a_todo_that_starts_passing_fails(tmp_path: Path) -> None:
    directory = _pack(
        tmp_path,
        {
            "policy.toml": EVAL_RULE,
            "a.cases.py": "eval('1')  # todo-expect: TM301\nx = 1  # ok: TM301\n"
            "y = eval  # expect: TM301\n",
        },
    )
    (message,) = _messages(directory)
    assert "todo-expect TM301 now passes" in message


def test_a_missed_expectation_and_an_unexpected_finding_fail(tmp_path: Path) -> None:
    directory = _pack(
        tmp_path,
        {
            "policy.toml": EVAL_RULE,
            "a.cases.py": "print(1)  # expect: TM301\neval('1')  # ok: TM301\nexec('x')\n",
        },
    )
    messages = _messages(directory)
    assert any("expected TM301 here" in m for m in messages)
    assert any("must not be raised here" in m for m in messages)


def test_cases_are_independent_programs(tmp_path: Path) -> None:
    cases = split_cases("# case: one\nimport os as e\n# case: two\ne('x')\n")
    assert [c.title for c in cases] == ["one", "two"]
    assert cases[1].first_line == 3 and cases[1].code.startswith("# case: two")


def test_decision_cases_check_verdict_backend_and_rules(tmp_path: Path) -> None:
    directory = _pack(
        tmp_path,
        {
            "policy.toml": EVAL_RULE,
            "a.cases.py": "eval('1')  # expect: TM301\nprint('1')  # ok: TM301\n",
            "d.test.toml": """
                [[case]]
                name = "eval is denied"
                code = "eval('1')"
                verdict = "allow"
                backend = "restricted"
                rules = ["TM999"]

                [[case]]
                name = "typo"
                code = "print(1)"
                verdikt = "allow"
            """,
        },
    )
    messages = _messages(directory)
    assert any("expected verdict 'allow', got 'deny'" in m for m in messages)
    assert any("expected backend 'restricted'" in m for m in messages)
    assert any("TM999" in m for m in messages)
    assert any("unknown key(s) ['verdikt']" in m for m in messages)


def test_a_broken_policy_is_a_failure_with_its_location(tmp_path: Path) -> None:
    directory = _pack(tmp_path, {"policy.toml": "[limits]\ncpu = 1\n", "a.cases.py": "x = 1\n"})
    (failure,) = run_pack_tests(directory).failures
    assert failure.line == 2 and "policy error" in failure.message


def test_the_pytest_plugin_collects_packs(pytester: pytest.Pytester, tmp_path: Path) -> None:
    good = pytester.mkdir("good")
    (good / "policy.toml").write_text(EVAL_RULE)
    (good / "a.cases.py").write_text("eval('1')  # expect: TM301\nprint(1)  # ok: TM301\n")
    bad = pytester.mkdir("bad")
    (bad / "policy.toml").write_text(EVAL_RULE)
    (bad / "a.cases.py").write_text("print(1)  # expect: TM301\n")
    result = pytester.runpytest("-p", "safeexec.testing.pytest_plugin", "good", "bad")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*expected TM301 here*"])


def test_shipped_rule_ids_sit_in_the_documented_range_of_their_kind() -> None:
    by_check = {
        "dynamic-import": "SX2",
        "dynamic-attribute-name": "SX3",
        "path-outside-workdir": "SX3",
        "string-annotation-code": "SX3",
        "timed-code-string": "SX3",
        "module-reexport": "SX4",
        "dynamic-format-template": "SX4",
        "module-mutation": "SX4",
        "module-as-value": "SX4",
        "attribute-name-argument": "SX4",
        "object-namespace-dict": "SX3",
        "tool-not-granted": "SX6",
        "tool-call-limit": "SX6",
        "tool-requires-approval": "SX6",
    }
    by_kind = {"import": "SX2", "call": "SX3", "attribute": "SX4", "name": "SX4", "node": "SX4"}
    by_kind["estimate"] = "SX5"
    checked = 0
    for pack in shipped_packs():
        for rule in load_policy(pack).rules:
            checked += 1
            if rule.check is not None:
                expected = by_check[rule.check]
            else:
                assert rule.match is not None
                expected = by_kind[rule.match.kind.value]
            assert rule.id.startswith(expected), (pack, rule.id, rule.name)
    assert len(shipped_packs()) >= 3 and checked > len(shipped_packs())


@pytest.mark.parametrize("pack", ["default", "strict", "data-analysis"])
def test_every_rule_example_triggers_its_rule(pack: str) -> None:
    policy = load_policy(pack)
    assert policy.rules
    for rule in policy.rules:
        mode = rule.modes[0] if rule.modes else None
        raised = {f.rule for f in check(Action.create(rule.example), policy, backend=mode).findings}
        assert rule.id in raised, (rule.id, rule.example, raised)
