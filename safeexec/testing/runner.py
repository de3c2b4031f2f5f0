"""The policy-test runner: tests live beside the rules, and an empty or stale test set fails.

``*.cases.py`` files hold code annotated line by line: ``# expect: SX201`` (this rule must fire on
this line), ``# ok: SX201`` (it must not), ``# todo-expect: SX201`` (a known miss, written down
openly: it must *not* fire yet, and the runner fails once it does, so the note gets promoted).
Any other finding on an annotated or unannotated line is a failure too. A file is split into
independent cases at ``# case: <title>`` lines; a ``# mode: restricted`` line in a case checks
it for that execution mode (default: the pack's default backend); findings without a position
(estimate rules) belong to a case's first line. ``*.test.toml`` files hold decision cases (code →
verdict and backend). The runner fails a pack with no tests and a rule of the pack without at
least one expect and one ok case.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from safeexec.errors import PolicyError
from safeexec.gate import check_action
from safeexec.model.values import Action, Finding
from safeexec.policy.loader import load_policy
from safeexec.policy.packs import pack_test_files, packs_root
from safeexec.policy.schema import Policy

__all__ = ["Annotation", "Case", "CaseFailure", "PackReport", "run_pack_tests", "split_cases"]

_ANNOTATION = re.compile(r"#\s*(expect|ok|todo-expect):\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
_CASE_HEADER = re.compile(r"^\s*#\s*case:\s*(.*?)\s*(?:#.*)?$")
_MODE_LINE = re.compile(r"^\s*#\s*mode:\s*([a-z]+)\s*$", re.MULTILINE)
_DECISION_KEYS = frozenset({"name", "code", "verdict", "backend", "request_backend", "rules"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseFailure:
    """One failed expectation: where (file and line) and what went wrong."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Annotation:
    kind: str  # expect | ok | todo-expect
    rule: str
    line: int  # in the file, 1-based


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One independently checked program cut out of a ``*.cases.py`` file."""

    title: str
    first_line: int  # the file line of the case's line 1
    code: str
    annotations: tuple[Annotation, ...]
    mode: str | None = None  # the execution mode checked for; None: the pack's default


@dataclass(slots=True, kw_only=True)
class PackReport:
    """What running one pack's tests found; ``ok`` when nothing failed."""

    pack: str
    files: list[str] = field(default_factory=list)
    cases: int = 0
    annotations: int = 0
    todos: int = 0
    failures: list[CaseFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def split_cases(text: str) -> list[Case]:
    """Cut a cases file into cases at ``# case:`` lines (the whole file when there are none)."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _CASE_HEADER.match(line)]
    preamble = lines[: starts[0]] if starts else lines
    if not starts or any(line.strip() and not line.lstrip().startswith("#") for line in preamble):
        starts = [0, *starts]
    cases = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        header = _CASE_HEADER.match(chunk[0]) if chunk else None
        annotations = tuple(
            Annotation(kind=kind, rule=rule.strip(), line=start + offset + 1)
            for offset, line in enumerate(chunk)
            for kind, rules in _ANNOTATION.findall(line)
            for rule in rules.split(",")
        )
        code = "\n".join(chunk) + "\n"
        mode = _MODE_LINE.search(code)
        cases.append(
            Case(
                title=header.group(1) if header else f"line {start + 1}",
                first_line=start + 1,
                code=code,
                annotations=annotations,
                mode=mode.group(1) if mode else None,
            )
        )
    return cases


def run_pack_tests(pack: str | Path) -> PackReport:
    """Run every test file of ``pack`` (a shipped pack name or a pack directory)."""
    directory = Path(pack) if Path(pack).is_dir() else packs_root() / str(pack)
    report = PackReport(pack=str(pack))
    try:
        policy = load_policy(directory)
    except PolicyError as exc:
        _fail(report, exc.file or str(directory), exc.line or 0, f"policy error: {exc}")
        return report
    files = pack_test_files(directory)
    report.files = [str(f) for f in files]
    if not files:
        _fail(
            report,
            str(directory),
            0,
            "the pack has no tests (*.cases.py, *.test.toml): an empty test run fails",
        )
        return report
    expects: dict[str, int] = {}
    oks: dict[str, int] = {}
    for path in files:
        if path.name.endswith(".cases.py"):
            _run_cases_file(path, policy, report, expects, oks)
        else:
            _run_decision_file(path, policy, report, expects)
    if report.cases == 0:
        _fail(
            report,
            str(directory),
            0,
            "the pack's test files hold no cases: an empty test run fails",
        )
    here = directory.resolve()
    own = [r for r in policy.rules if Path(r.source.rpartition(":")[0]).resolve().parent == here]
    for rule in own:
        missing = [
            kind
            for kind, counts in (("expect", expects), ("ok", oks))
            if counts.get(rule.id, 0) == 0
        ]
        if missing:
            file, _, line = rule.source.rpartition(":")
            _fail(
                report,
                file or rule.source,
                int(line) if line.isdigit() else 0,
                f"rule {rule.id} ({rule.name}) has no {' and no '.join(missing)} case; "
                f"add `# {missing[0]}: {rule.id}` lines to a *.cases.py file",
            )
    return report


def _fail(report: PackReport, file: str, line: int, message: str) -> None:
    report.failures.append(CaseFailure(file=file, line=line, message=message))


def _finding_line(finding: Finding, case: Case) -> int:
    if finding.span is None:
        return case.first_line
    return case.first_line + finding.span.start_line - 1


def _run_cases_file(
    path: Path, policy: Policy, report: PackReport, expects: dict[str, int], oks: dict[str, int]
) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(report, str(path), 0, f"cannot read: {exc}")
        return
    for case in split_cases(text):
        if not case.code.strip():
            continue
        report.cases += 1
        report.annotations += len(case.annotations)
        result = check_action(
            Action.create(case.code, action_id=f"{path.name}:{case.first_line}"),
            policy,
            backend=case.mode,
        )
        raised: dict[tuple[int, str], Finding] = {}
        for finding in result.findings:
            raised.setdefault((_finding_line(finding, case), finding.rule), finding)
        declared = {(a.line, a.rule): a.kind for a in case.annotations}
        for annotation in case.annotations:
            key = (annotation.line, annotation.rule)
            if annotation.kind == "expect":
                expects[annotation.rule] = expects.get(annotation.rule, 0) + 1
                if key not in raised:
                    _fail(
                        report,
                        str(path),
                        annotation.line,
                        f"expected {annotation.rule} here, but it was not raised ({case.title})",
                    )
            elif annotation.kind == "ok":
                oks[annotation.rule] = oks.get(annotation.rule, 0) + 1
                if key in raised:
                    _fail(
                        report,
                        str(path),
                        annotation.line,
                        f"{annotation.rule} must not be raised here, but was: "
                        f"{raised[key].message} ({case.title})",
                    )
            else:
                report.todos += 1
                if key in raised:
                    _fail(
                        report,
                        str(path),
                        annotation.line,
                        f"todo-expect {annotation.rule} now passes: change it to "
                        f"`# expect: {annotation.rule}` ({case.title})",
                    )
        for (line, rule), finding in sorted(raised.items()):
            if (line, rule) not in declared:
                _fail(
                    report,
                    str(path),
                    line,
                    f"unexpected {rule} ({finding.name}): {finding.message} ({case.title}); "
                    "annotate it or fix the rule",
                )


def _run_decision_file(
    path: Path, policy: Policy, report: PackReport, expects: dict[str, int]
) -> None:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        _fail(report, str(path), 0, f"cannot read decision cases: {exc}")
        return
    unknown = set(data) - {"case"}
    cases = data.get("case", [])
    if unknown or not isinstance(cases, list):
        _fail(
            report,
            str(path),
            0,
            "a decision file holds only [[case]] tables, found "
            f"{sorted(unknown) or type(cases).__name__}",
        )
        return
    lines = text.split("\n")
    case_lines = [i + 1 for i, line in enumerate(lines) if line.strip() == "[[case]]"]
    for index, case in enumerate(cases):
        line = case_lines[index] if index < len(case_lines) else 0
        problem = _decision_case_problem(case)
        if problem:
            _fail(report, str(path), line, problem)
            continue
        report.cases += 1
        result = check_action(
            Action.create(case["code"], action_id=f"{path.name}:{line}"),
            policy,
            backend=case.get("request_backend"),
        )
        decision = result.decision
        name = case.get("name", f"case {index + 1}")
        raised = {f.rule for f in decision.findings}
        if decision.verdict.value != case["verdict"]:
            reasons = "; ".join(f"{f.rule} {f.message}" for f in decision.findings) or "no findings"
            _fail(
                report,
                str(path),
                line,
                f"{name}: expected verdict {case['verdict']!r}, "
                f"got {decision.verdict.value!r} ({reasons})",
            )
        if "backend" in case and decision.backend != case["backend"]:
            _fail(
                report,
                str(path),
                line,
                f"{name}: expected backend {case['backend']!r}, got {decision.backend!r}",
            )
        for rule in case.get("rules", []):
            expects[rule] = expects.get(rule, 0) + 1
            if rule not in raised:
                _fail(
                    report,
                    str(path),
                    line,
                    f"{name}: expected {rule} among the findings, got {sorted(raised) or 'none'}",
                )


def _decision_case_problem(case: object) -> str | None:
    if not isinstance(case, dict):
        return "each [[case]] must be a table"
    unknown = set(case) - _DECISION_KEYS
    if unknown:
        allowed = ", ".join(sorted(_DECISION_KEYS))
        return f"unknown key(s) {sorted(unknown)} in [[case]]; allowed: {allowed}"
    if not isinstance(case.get("code"), str) or case.get("verdict") not in (
        "allow",
        "deny",
        "needs_approval",
    ):
        return 'a [[case]] needs code = "..." and verdict = "allow"|"deny"|"needs_approval"'
    rules = case.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        return "rules must be a list of rule ids"
    return None
