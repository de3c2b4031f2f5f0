"""The committed local-model run (``make ablation-local``: SmolLM2-135M through llama.cpp's
OpenAI-compatible server and the SDK path) replays offline, in CI, to the table it recorded."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.ablation.local_model import replay
from benchmarks.ablation.report import strip_timings
from safeexec.model.codec import JSONValue

RUN = Path(__file__).resolve().parents[2] / "benchmarks" / "ablation" / "recordings" / "smollm2"


def _facts(row: dict[str, JSONValue]) -> JSONValue:
    """A row without what differs between a live run and its replay: timings, the model field
    of the cell (``openai:...`` live, ``replay:...`` replayed)."""
    return strip_timings({k: v for k, v in row.items() if k != "model"})


def test_the_committed_local_model_run_replays_to_its_table() -> None:
    recorded = json.loads((RUN / "results.json").read_text(encoding="utf-8"))
    live = recorded["summary"]
    provenance = live.pop("provenance")
    assert (live.pop("executor"), live.pop("size")) == ("local", "full")  # how, not what
    assert provenance["model"].startswith("openai:smollm2")
    assert set(provenance["budgets"]) == {"max_tokens", "token_budget", "cpu_seconds"}
    rows, replayed = replay(RUN)
    assert strip_timings(replayed) == strip_timings(live)
    assert [_facts(r) for r in rows] == [_facts(r) for r in recorded["runs"]]
    assert {r["model_name"] for r in rows} == {f"openai:{provenance['model'].split(':', 1)[1]}"}
    assert not any(r["end_reason"] == "model_error" for r in rows)  # every turn was recorded


def test_the_model_s_mistakes_are_not_counted_as_security_refusals() -> None:
    recorded = json.loads((RUN / "results.json").read_text(encoding="utf-8"))
    table = (RUN / "results.md").read_text(encoding="utf-8")
    assert "| agent/format/mode | answered | max_turns |" in table
    for row in recorded["runs"]:
        faults = row["faults"]
        # Syntax errors, missing code and bad calls are the model's; never security refusals.
        if not faults.get("policy_refusal") and not faults.get("guard_refusal"):
            assert not {k: v for k, v in row["refusals"].items() if k != "runtime"}, row
    for entry in recorded["summary"]["clean"].values():
        faults = entry["faults"]
        policy_and_guard = faults.get("policy_refusal", 0) + faults.get("guard_refusal", 0)
        assert entry["security_refusals"] == policy_and_guard
