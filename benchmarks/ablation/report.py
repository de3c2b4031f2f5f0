"""Aggregates of the matrix's rows, and their views: ``results.json``, a Markdown table, charts.

Every figure is computed from the rows here; the table and the charts only show it. Rates carry
their n and a 95 % Wilson interval; times are ratios to a baseline measured in the same run (the
task's reference program under plain ``exec``), as a median with its quartiles; end reasons are
columns of their own, and security refusals count only the policy's and the guards' decisions.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.ablation.stats import spread, wilson
from safeexec.harness import EndReason, Suite
from safeexec.harness.formats import TurnFault
from safeexec.model.codec import JSONValue

__all__ = ["END_REASONS", "aggregate", "charts", "markdown", "strip_timings"]

END_REASONS: tuple[str, ...] = tuple(e.value for e in EndReason)
"""The end-reason columns, in the table's order."""
_SECURITY = (TurnFault.POLICY_REFUSAL.value, TurnFault.GUARD_REFUSAL.value)

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


def _ci(part: int, whole: int) -> JSONValue:
    interval = wilson(part, whole)
    return None if interval is None else list(interval)


def _faults(rows: Sequence[Row]) -> Counter[str]:
    out: Counter[str] = Counter()
    for row in rows:
        faults = row.get("faults")
        if isinstance(faults, dict):
            out.update({k: int(v) for k, v in faults.items() if isinstance(v, int)})
    return out


def _tokens(rows: Sequence[Row], kind: str) -> float | None:
    """Mean ``kind`` tokens per run (``None`` when no run's model reported any: scripted)."""
    counts = [t.get(kind) for r in rows if isinstance(t := r.get("tokens"), dict)]
    if not any(isinstance(n, int) for n in counts):
        return None
    return _mean(float(n) if isinstance(n, int) else 0.0 for n in counts)


def _outcomes(rows: Sequence[Row]) -> dict[str, JSONValue]:
    succeeded = sum(bool(r["success"]) for r in rows)
    faults = _faults(rows)
    return {
        "runs": len(rows),
        "successes": succeeded,
        "success_rate": _rate(succeeded, len(rows)),
        "success_ci95": _ci(succeeded, len(rows)),
        "avg_turns": _mean(_num(r, "turns") for r in rows),
        "avg_actions": _mean(_num(r, "actions") for r in rows),
        "avg_invalid_actions": _mean(_num(r, "invalid_actions") for r in rows),
        "avg_tool_calls": _mean(_num(r, "tool_calls") for r in rows),
        "end_reasons": dict(Counter(str(r["end_reason"]) for r in rows)),
        "faults": dict(faults),
        "security_refusals": sum(faults[k] for k in _SECURITY),
        "avg_prompt_tokens": _tokens(rows, "prompt"),
        "avg_completion_tokens": _tokens(rows, "completion"),
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
        recovered = sum(bool(r["success"]) for r in applied)
        recovery[f"{fault}/{feedback}"] = {
            "runs": len(group),
            "applied": len(applied),
            "recovery_rate": _rate(recovered, len(applied)),
            "recovery_ci95": _ci(recovered, len(applied)),
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
        attacked = sum(_attacked(r) for r in group)
        attack[f"{grants}/{fmt}/{mode}"] = {
            "runs": len(group),
            "attack_success_rate": _rate(attacked, len(group)),
            "attack_success_ci95": _ci(attacked, len(group)),
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
    baseline = {
        str(r["task"]): float(p)
        for r in oracle
        if isinstance(p := r.get("plain_exec_s"), int | float) and p > 0
    }
    for (fmt, mode), group in _group(oracle, "format", "mode").items():
        ratios = [
            sum(_times(r).get(s, 0.0) for s in ("gate", "execution", "tool")) / baseline[task]
            for r in group
            if (task := str(r["task"])) in baseline
        ]
        entry = overhead[f"{fmt}/{mode}"]
        assert isinstance(entry, dict)
        entry["x_baseline"] = spread(ratios)  # type: ignore[assignment]
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
        "benign_false_refusal_rate": _rate(sum(bool(_refusals(r)) for r in oracle), len(oracle)),
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
    """``value`` without wall-clock fields (what two executors, or a run and its replay, may
    differ in)."""
    timed = {
        "time_s",
        "plain_exec_s",
        "overhead_ms_per_action",
        "plain_exec_ms_per_program",
        "session_start_calibration_ms",
        "wall_s",
    }
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k not in timed}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value


def _table(header: Sequence[str], lines: Iterable[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join("–" if c is None else str(c) for c in line) + " |" for line in lines]
    return out


def _interval(ci: object) -> str | None:
    return f"{ci[0]:.2f}–{ci[1]:.2f}" if isinstance(ci, list) else None


def _ratio(found: object) -> str | None:
    if not isinstance(found, dict):
        return None
    return f"{found['median']:g} [{found['p25']:g}–{found['p75']:g}] n={found['n']}"


def _who(summary: Mapping[str, Any]) -> str:
    provenance = summary.get("provenance")
    model = provenance.get("model") if isinstance(provenance, dict) else None
    return f"model {model}" if model and model != "scripted" else "scripted agents"


def markdown(summary: Mapping[str, Any]) -> str:
    """The report as Markdown tables (scripted agents measure mechanisms, never model quality;
    a model's run says which model)."""
    parts = [f"# Ablation: action formats × execution modes ({_who(summary)})", ""]
    clean = summary["clean"]
    assert isinstance(clean, dict)
    parts += ["## Clean runs (success: k/n and its 95 % Wilson interval)", ""]
    parts += _table(
        [
            "agent/format/mode",
            "success",
            "95 % CI",
            "turns",
            "actions",
            "invalid",
            "tool calls",
            "prompt tokens",
            "completion tokens",
        ],
        [
            [
                k,
                f"{v['successes']}/{v['runs']}",
                _interval(v["success_ci95"]),
                v["avg_turns"],
                v["avg_actions"],
                v["avg_invalid_actions"],
                v["avg_tool_calls"],
                v["avg_prompt_tokens"],
                v["avg_completion_tokens"],
            ]
            for k, v in clean.items()
            if isinstance(v, dict)
        ],
    )
    parts += [
        "",
        "## End reasons (runs), and security refusals (turns refused by the policy or a guard)",
        "",
    ]
    parts += _table(
        ["agent/format/mode", *END_REASONS, "security refusals"],
        [
            [k, *(v["end_reasons"].get(e, 0) for e in END_REASONS), v["security_refusals"]]
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
            "× baseline: median [quartiles] n",
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
                _ratio(v.get("x_baseline")),
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
        "estimates that part. × baseline: each run's time over its own task's reference "
        "program under plain exec, measured in the same run.",
        "",
    ]
    recovery = summary["recovery"]
    assert isinstance(recovery, dict)
    parts += ["", "## Faults: recovery rate (applied faults only)", ""]
    parts += _table(
        ["fault/feedback", "runs", "applied", "recovered", "95 % CI", "by format"],
        [
            [
                k,
                v["runs"],
                v["applied"],
                v["recovery_rate"],
                _interval(v["recovery_ci95"]),
                ", ".join(f"{f}: {r}" for f, r in v["by_format"].items()),
            ]
            for k, v in recovery.items()
            if isinstance(v, dict)
        ],
    )
    attacks = summary["attacks"]
    assert isinstance(attacks, dict)
    parts += ["", "## Injections: broad grants vs scoped capabilities", ""]
    parts += _table(
        ["grants/format/mode", "runs", "attack success", "95 % CI", "utility", "stopped at"],
        [
            [
                k,
                v["runs"],
                v["attack_success_rate"],
                _interval(v["attack_success_ci95"]),
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


Bar = tuple[str, float, tuple[float, float] | None, int]
"""One bar: label, value, its interval (or ``None``) and its n."""


def _rate_bars(groups: Mapping[str, Any], rate: str, ci: str) -> list[Bar]:
    return [
        (k, float(v[rate] or 0.0), tuple(v[ci]) if v.get(ci) else None, int(v["runs"]))
        for k, v in groups.items()
        if isinstance(v, dict) and v.get(rate) is not None
    ]


def charts(summary: Mapping[str, Any], out: Path) -> list[Path]:
    """PNG charts of the summary (matplotlib, headless); returns the files written. Every bar
    says its n; rates carry 95 % Wilson intervals, ratios their quartiles; a zero bar is drawn
    as a marked line at zero, not left out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []

    def bars(name: str, title: str, data: Sequence[Bar], ylabel: str, *, log: bool = False) -> None:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        xs = list(range(len(data)))
        values = [v for _, v, _, _ in data]
        low = [v - (ci[0] if ci else v) for _, v, ci, _ in data]
        high = [(ci[1] if ci else v) - v for _, v, ci, _ in data]
        ax.bar(xs, values, color="C0", edgecolor="black", linewidth=0.6)
        if any(ci is not None for _, _, ci, _ in data):
            ax.errorbar(xs, values, yerr=[low, high], fmt="none", ecolor="black", capsize=3)
        zeros = [x for x, v in zip(xs, values, strict=True) if v == 0]
        ax.plot(zeros, [0.0] * len(zeros), linestyle="none", marker="_", markersize=18,
                markeredgewidth=3, color="C3", label="zero")  # fmt: skip
        if log:
            ax.set_yscale("log")
        top = max([v + h for v, h in zip(values, high, strict=True)] or [1.0]) or 1.0
        for x, (_, v, ci, n) in zip(xs, data, strict=True):
            y = ci[1] if ci else v
            label = f"n={n}" + (" (0)" if v == 0 else "")
            ax.annotate(label, (x, y if log and y > 0 else y + 0.02 * top), ha="center",
                        va="bottom", fontsize=7)  # fmt: skip
        ax.set_xticks(xs, [label for label, _, _, _ in data])
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if not log:
            ax.set_ylim(0, top * 1.15)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        fig.tight_layout()
        path = out / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    clean = summary["clean"]
    assert isinstance(clean, dict)
    bars(
        "success_by_format_mode",
        "Success by agent, format and mode (95 % Wilson intervals)",
        _rate_bars(clean, "success_rate", "success_ci95"),
        "success rate",
    )
    bars(
        "turns_by_format_mode",
        "Mean turns by agent, format and mode",
        [(k, float(v["avg_turns"] or 0), None, int(v["runs"])) for k, v in clean.items()],
        "turns",
    )
    overhead = summary["overhead_ms_per_action"]
    assert isinstance(overhead, dict)
    ratios: list[Bar] = []
    for key, entry in overhead.items():
        found = entry.get("x_baseline") if isinstance(entry, dict) else None
        if isinstance(found, dict):
            ratios.append(
                (key, float(found["median"]), (float(found["p25"]), float(found["p75"])),
                 int(found["n"]))
            )  # fmt: skip
    if ratios:
        bars(
            "overhead_x_baseline",
            "Time per program over plain exec of the same program, same run (median, quartiles)",
            ratios,
            "× plain exec",
            log=True,
        )
    ends: list[Bar] = []
    for key, entry in clean.items():
        if isinstance(entry, dict):
            counts = entry["end_reasons"]
            ends += [(f"{key}: {e}", float(counts.get(e, 0)), None, int(entry["runs"]))
                     for e in END_REASONS if counts.get(e)]  # fmt: skip
    bars("end_reasons", "End reasons (runs) by agent, format and mode", ends, "runs")
    attacks = summary["attacks"]
    assert isinstance(attacks, dict)
    bars(
        "attack_success",
        "Attack success: broad grants vs scoped capabilities (95 % Wilson intervals)",
        _rate_bars(attacks, "attack_success_rate", "attack_success_ci95"),
        "rate",
    )
    return written
