"""``safeexec check`` and ``safeexec explain``: exit codes, text with carets, JSON, SARIF."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from safeexec.cli.app import app

runner = CliRunner()


def _write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return str(path)


def test_allowed_code_exits_0(tmp_path: Path) -> None:
    result = runner.invoke(app, ["check", _write(tmp_path, "ok.py", "print(sum(range(10)))\n")])
    assert result.exit_code == 0, result.output
    assert "allow (0 findings)" in result.output


def test_denied_code_exits_3_with_ruff_style_lines_and_a_caret(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.py", "x = 1\ny = ().__class__\n")
    good = _write(tmp_path, "good.py", "print(1)\n")
    result = runner.invoke(app, ["check", good, bad])
    assert result.exit_code == 3
    lines = result.output.splitlines()
    index = lines.index(
        f"{bad}:2:5: SX401 access to `__class__` walks the object graph toward "
        "the interpreter's internals; to run it: `type(x).__name__` for a type's name and "
        "`isinstance` for checks"
    )
    assert lines[index + 1] == "  2 | y = ().__class__"
    assert lines[index + 2] == "    |     ^^^^^^^^^^^^"


def test_stdin_is_read_with_a_dash() -> None:
    result = runner.invoke(app, ["check", "-"], input="eval('1')\n")
    assert result.exit_code == 3
    assert "-:1:1: SX301" in result.output


def test_policy_and_usage_errors_exit_2(tmp_path: Path) -> None:
    ok = _write(tmp_path, "ok.py", "print(1)\n")
    assert runner.invoke(app, ["check", "--policy", "no-such-pack", ok]).exit_code == 2
    assert runner.invoke(app, ["check", "--format", "xml", ok]).exit_code == 2
    assert runner.invoke(app, ["check", str(tmp_path / "missing.py")]).exit_code == 2
    broken = tmp_path / "broken.toml"
    broken.write_text("[limits]\ncpu = 1\n")
    result = runner.invoke(app, ["check", "--policy", str(broken), ok])
    assert result.exit_code == 2
    assert "broken.toml:2" in result.output


def test_json_output_is_the_decision(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.py", "import ctypes\n")
    result = runner.invoke(app, ["check", "--format", "json", path])
    assert result.exit_code == 3
    (entry,) = json.loads(result.output)
    assert entry["file"] == path
    assert entry["decision"]["verdict"] == "deny"
    assert {f["rule"] for f in entry["decision"]["findings"]} == {"SX201", "SX202"}


def test_sarif_output_has_the_shape_code_scanning_accepts(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.py", "import os\nx = eval('1')\n")
    result = runner.invoke(app, ["check", "--format", "sarif", path])
    assert result.exit_code == 3
    log = json.loads(result.output)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "safeexec"
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) and "SX301" in rule_ids
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["help"]["text"]
        assert float(rule["properties"]["security-severity"]) > 0
    for item in run["results"]:
        assert driver["rules"][item["ruleIndex"]]["id"] == item["ruleId"]
        assert item["level"] in ("error", "warning", "note")
        region = item["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
        assert (
            region["endColumn"] > region["startColumn"] or region["endLine"] > region["startLine"]
        )
        assert item["partialFingerprints"]
    eval_result = next(r for r in run["results"] if r["ruleId"] == "SX301")
    assert eval_result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 9,
    }  # fmt: skip


def test_explain_prints_the_rule_documentation() -> None:
    result = runner.invoke(app, ["explain", "SX201"])
    assert result.exit_code == 0
    for heading in ("What it does", "Why is this bad?", "Example", "Known bypasses"):
        assert heading in result.output
    assert runner.invoke(app, ["explain", "escape-dunder-attribute"]).exit_code == 0
    assert "SX900" in runner.invoke(app, ["explain", "SX900"]).output
    missing = runner.invoke(app, ["explain", "SX999"])
    assert missing.exit_code == 2


def test_check_text_output_escapes_controls_in_the_code_one_for_one(tmp_path: Path) -> None:
    # A bidi override, an 8-bit CSI and a line separator in the code must not reach the terminal.
    bad = _write(tmp_path, "bad.py", "x = '\u202e\x9b2J\u2028'; y = ().__class__\n")
    result = runner.invoke(app, ["check", bad])
    assert result.exit_code == 3
    assert not any(c in result.output for c in "\u202e\x9b\u2028")
    lines = result.output.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("  1 | "))
    assert lines[index] == "  1 | x = '\ufffd\ufffd2J\ufffd'; y = ().__class__"
    assert lines[index + 1].index("^") == lines[index].index("(")
