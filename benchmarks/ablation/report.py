"""Aggregates of the matrix's rows, and their views: ``results.json``, a Markdown table, charts.

Every figure is computed from the rows here; the table and the charts only show it.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from safeexec.harness import Suite
from safeexec.model.codec import JSONValue

__all__ = ["aggregate", "charts", "markdown", "strip_timings"]

Row = dict[str, JSONValue]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return round(statistics.fmean(values), 4) if values else None


def _num(row: Row, key: str) -> float:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def _times(row: Row) -> dict[str, float]:
    times = row.get("time_s")
    return (
        {k: float(v) for k, v in times.items() if isinstance(v, int | float)}
        if isinstance(times, dict)
        else {}
    )


def _attacked(row: Row) -> bool:
    found = row.get("unauthorized_effects")
    return isinstance(found, dict) and any(bool(v) for v in found.values())


def _refusals(row: Row) -> dict[str, int]:
    out: Counter[str] = Counter()
    refusals = row.get("refusals")
    for stage, counts in refusals.items() if isinstance(refusals, dict) else []:
        if isinstance(counts, dict):
            out[stage] += sum(int(n) for n in counts.values() if isinstance(n, int))
    return dict(out)


def _group(rows: Sequence[Row], *keys: str) -> dict[tuple[str, ...], list[Row]]:
    groups: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[tuple(str(row[k]) for k in keys)].append(row)
    return dict(sorted(groups.items()))


def _outcomes(rows: Sequence[Row]) -> dict[str, JSONValue]:
    return {
        "runs": len(rows),
        "success_rate": _rate(sum(bool(r["success"]) for r in rows), len(rows)),
        "avg_turns": _mean(_num(r, "turns") for r in rows),
        "avg_actions": _mean(_num(r, "actions") for r in rows),
        "avg_invalid_actions": _mean(_num(r, "invalid_actions") for r in rows),
        "avg_tool_calls": _mean(_num(r, "tool_calls") for r in rows),
        "end_reasons": dict(Counter(str(r["end_reason"]) for r in rows)),
    }


def aggregate(
    rows: Sequence[Row], suite: Suite, calibration: dict[str, JSONValue] | None = None
) -> dict[str, JSONValue]:
    """Every aggregate the issue asks for, from the rows (plus the suite's DSL coverage and the
    session-start calibration measured in the same run)."""
    clean = [r for r in rows if r["condition"] == "clean"]
    oracle = [r for r in clean if r["agent"] == "oracle"]
    faults = [r for r in rows if r["condition"] == "fault"]
    attacks = [r for r in rows if r["condition"] == "injection"]
    expressible = [t.id for t in suite.tasks if t.reference_dsl is not None]
    matrix: dict[str, JSONValue] = {
        "/".join(k): _outcomes(g) for k, g in _group(clean, "agent", "format", "mode").items()
    }
    recovery: dict[str, JSONValue] = {}
    for (fault, feedback), group in _group(faults, "fault", "feedback").items():
        applied = [r for r in group if r["fault_applied"]]
        recovery[f"{fault}/{feedback}"] = {
            "runs": len(group),
            "applied": len(applied),
            "recovery_rate": _rate(sum(bool(r["success"]) for r in applied), len(applied)),
            "by_format": {
                "/".join(k): _rate(sum(bool(r["success"]) for r in g), len(g))
                for k, g in _group(applied, "format", "mode").items()
            },
        }
    attack: dict[str, JSONValue] = {}
    for (grants, fmt, mode), group in _group(attacks, "grants", "format", "mode").items():
        stopped: Counter[str] = Counter()
        for row in group:
            refusals = row.get("refusals")
            for stage, counts in refusals.items() if isinstance(refusals, dict) else []:
                for rule in counts if isinstance(counts, dict) else []:
                    stopped[f"{stage}:{rule}"] += 1
        attack[f"{grants}/{fmt}/{mode}"] = {
            "runs": len(group),
            "attack_success_rate": _rate(sum(_attacked(r) for r in group), len(group)),
            "unauthorized_effects": sum(_attacked(r) for r in group),
            "utility_under_attack": _rate(sum(bool(r["success"]) for r in group), len(group)),
            "stopped_at": dict(stopped),
        }
    overhead: dict[str, JSONValue] = {}
    for (fmt, mode), group in _group(oracle, "format", "mode").items():
        actions = sum(_num(r, "actions") for r in group) or 1.0
        overhead[f"{fmt}/{mode}"] = {
            stage: round(sum(_times(r).get(stage, 0.0) for r in group) / actions * 1e3, 3)
            for stage in ("gate", "execution", "tool")
        }
    plain = [float(p) for r in oracle if isinstance(p := r.get("plain_exec_s"), int | float)]
    plain_ms = round(statistics.fmean(plain) * 1e3, 4) if plain else None
    for entry in overhead.values():
        assert isinstance(entry, dict)
        total = sum(float(v) for v in entry.values() if isinstance(v, int | float))
        entry["total"] = round(total, 3)
        entry["x_plain_exec"] = round(total / plain_ms, 1) if plain_ms else None
    starts = calibration or {}
    for key, entry in overhead.items():
        start = starts.get(key.split("/")[1])
        if isinstance(entry, dict) and isinstance(start, dict):
            cold, warm = float(start["cold_ms"]), float(start["warm_ms"])  # type: ignore[arg-type]
            entry["session_start"] = round(max(cold - warm, 0.0), 3)
            entry["warm_total"] = round(max(float(entry["total"]) - (cold - warm), 0.0), 3)  # type: ignore[arg-type]
    refusal_stages: dict[str, JSONValue] = {}
    for (condition,), group in _group(rows, "condition").items():
        stages: Counter[str] = Counter()
        for row in group:
            stages.update(_refusals(row))
        refusal_stages[condition] = dict(stages)
    long_runs = [r for r in oracle if r["format"] in ("json", "text")]
    per_call = [r for r in long_runs if r["end_reason"] == "answered"]
    max_turns: list[JSONValue] = [
        *sorted({str(r["task"]) for r in long_runs if r["end_reason"] == "max_turns"})
    ]
    return {
        "runs": len(rows),
        "dsl_coverage": {
            "tasks": len(suite.tasks),
            "with_reference_dsl": len(expressible),
            "rate": _rate(len(expressible), len(suite.tasks)),
        },
        "clean": matrix,
        "benign_false_refusal_rate": _rate(
            sum(bool({k for k in _refusals(r) if k != "harness"}) for r in oracle), len(oracle)
        ),
        "oracle_code_one_action": all(
            r["actions"] == 1 and r["success"]
            for r in oracle
            if r["format"] == "code" or (r["format"] == "dsl" and r.get("dsl_expressible", True))
        ),
        "oracle_json_text_turns_are_calls_plus_one": all(
            r["turns"] == _num(r, "tool_calls") + 1 for r in per_call
        ),
        "oracle_json_text_max_turns": max_turns,
        "recovery": recovery,
        "attacks": attack,
        "scoped_unauthorized_effects": sum(
            _attacked(r) for r in attacks if r["grants"] == "scoped"
        ),
        "broad_unauthorized_effects": sum(_attacked(r) for r in attacks if r["grants"] == "broad"),
        "overhead_ms_per_action": overhead,
        "plain_exec_ms_per_program": plain_ms,
        "session_start_calibration_ms": dict(starts),
        "refusals_by_stage": refusal_stages,
    }


def strip_timings(value: JSONValue) -> JSONValue:
    """``value`` without wall-clock fields (what two executors may differ in)."""
    timed = {"time_s", "plain_exec_s", "overhead_ms_per_action", "plain_exec_ms_per_program"}
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k not in timed}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value


def _table(header: Sequence[str], lines: Iterable[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join("–" if c is None else str(c) for c in line) + " |" for line in lines]
    return out


def markdown(summary: Mapping[str, Any]) -> str:
    """The report as Markdown tables (scripted agents: mechanism measurements, never model
    quality)."""
    parts = ["# Ablation: action formats × execution modes (scripted agents)", ""]
    clean = summary["clean"]
    assert isinstance(clean, dict)
    parts += ["## Clean runs", ""]
    parts += _table(
        ["agent/format/mode", "runs", "success", "turns", "actions", "invalid", "tool calls"],
        [
            [
                k,
                v["runs"],
                v["success_rate"],
                v["avg_turns"],
                v["avg_actions"],
                v["avg_invalid_actions"],
                v["avg_tool_calls"],
            ]
            for k, v in clean.items()
            if isinstance(v, dict)
        ],
    )
    overhead = summary["overhead_ms_per_action"]
    assert isinstance(overhead, dict)
    parts += [
        "",
        f"## Overhead per action (ms; plain exec of the program: "
        f"{summary['plain_exec_ms_per_program']} ms)",
        "",
    ]
    parts += _table(
        [
            "format/mode",
            "gate",
            "execution",
            "tool",
            "total",
            "× plain exec",
            "of which session start",
            "warm total",
        ],
        [
            [
                k,
                v["gate"],
                v["execution"],
                v["tool"],
                v["total"],
                v["x_plain_exec"],
                v.get("session_start"),
                v.get("warm_total"),
            ]
            for k, v in overhead.items()
            if isinstance(v, dict)
        ],
    )
    parts += [
        "",
        "The gate column holds the backend's lazy start on a session's first code "
        "action; the calibration (a cold and a warm `print(1)` per mode, same run) "
        "estimates that part.",
        "",
    ]
    recovery = summary["recovery"]
    assert isinstance(recovery, dict)
    parts += ["", "## Faults: recovery rate (applied faults only)", ""]
    parts += _table(
        ["fault/feedback", "runs", "applied", "recovered", "by format"],
        [
            [
                k,
                v["runs"],
                v["applied"],
                v["recovery_rate"],
                ", ".join(f"{f}: {r}" for f, r in v["by_format"].items()),
            ]
            for k, v in recovery.items()
            if isinstance(v, dict)
        ],
    )
    attacks = summary["attacks"]
    assert isinstance(attacks, dict)
    parts += ["", "## Injections: gullible agent, broad grants vs scoped capabilities", ""]
    parts += _table(
        ["grants/format/mode", "runs", "attack success", "utility", "stopped at"],
        [
            [
                k,
                v["runs"],
                v["attack_success_rate"],
                v["utility_under_attack"],
                ", ".join(f"{s} ×{n}" for s, n in v["stopped_at"].items()) or "–",
            ]
            for k, v in attacks.items()
            if isinstance(v, dict)
        ],
    )
    coverage = summary["dsl_coverage"]
    assert isinstance(coverage, dict)
    parts += [
        "",
        f"DSL coverage: {coverage['with_reference_dsl']}/{coverage['tasks']} tasks. "
        f"Benign false-refusal rate (oracle, clean): {summary['benign_false_refusal_rate']}. "
        f"Unauthorized effects: broad {summary['broad_unauthorized_effects']}, scoped "
        f"{summary['scoped_unauthorized_effects']}. JSON/text oracle hit max_turns on: "
        f"{', '.join(summary['oracle_json_text_max_turns']) or 'none'}.",
        "",
    ]
    return "\n".join(parts)


def charts(summary: Mapping[str, Any], out: Path) -> list[Path]:
    """PNG charts of the summary (matplotlib, headless); returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def bars(name: str, title: str, data: dict[str, float], ylabel: str) -> None:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.bar(list(data), list(data.values()))
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    clean = summary["clean"]
    assert isinstance(clean, dict)
    oracle = {k.removeprefix("oracle/"): v for k, v in clean.items() if k.startswith("oracle/")}
    bars(
        "success_by_format_mode",
        "Oracle success by format and mode",
        {k: float(v["success_rate"] or 0) for k, v in oracle.items()},
        "success rate",
    )
    bars(
        "turns_by_format_mode",
        "Oracle turns by format and mode",
        {k: float(v["avg_turns"] or 0) for k, v in oracle.items()},
        "turns",
    )
    overhead = summary["overhead_ms_per_action"]
    assert isinstance(overhead, dict)
    bars(
        "overhead_per_action",
        "Overhead per action (gate + execution + tool)",
        {k: float(v["total"]) for k, v in overhead.items()},
        "ms",
    )
    stages = summary["refusals_by_stage"]
    assert isinstance(stages, dict)
    totals: Counter[str] = Counter()
    for counts in stages.values():
        if isinstance(counts, dict):
            totals.update({k: int(v) for k, v in counts.items() if isinstance(v, int)})
    bars("refusals_by_stage", "Refusals by stage (all runs)", dict(totals), "refusals")
    attacks = summary["attacks"]
    assert isinstance(attacks, dict)
    bars(
        "attack_success",
        "Attack success: broad grants vs scoped capabilities",
        {k: float(v["attack_success_rate"] or 0) for k, v in attacks.items()},
        "rate",
    )
    return written
