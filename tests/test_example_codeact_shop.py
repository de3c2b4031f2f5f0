"""The CodeAct example (docs/concepts/modes.md) runs: one code action, exactly the tool calls it
made, audited."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from safeexec.model.values import ExecStatus, ToolCalled, Verdict

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "codeact_shop.py"


@pytest.fixture
def shop() -> ModuleType:
    spec = importlib.util.spec_from_file_location("codeact_shop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["codeact_shop"] = module
    spec.loader.exec_module(module)
    return module


def test_the_code_action_filters_and_reserves_through_capabilities(
    shop: ModuleType, tmp_path: Path
) -> None:
    outcome = shop.main(tmp_path)
    assert outcome.decision.verdict is Verdict.ALLOW
    assert outcome.decision.backend == "restricted"
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK
    assert [r["product_id"] for r in shop.RESERVATIONS] == ["p-100", "p-102"]
    calls = [e for e in outcome.event.side_effects if isinstance(e, ToolCalled)]
    assert [c.tool for c in calls] == ["search_products", "reserve", "reserve"]
    assert calls[1].effects == ("write", "money")

    (line,) = (tmp_path / "audit.jsonl").read_text().splitlines()
    logged = json.loads(line)
    assert [e["tool"] for e in logged["side_effects"]] == ["search_products", "reserve", "reserve"]
    assert all(e["kind"] == "tool_called" and e["ok"] for e in logged["side_effects"])


REPLY_WITH_THREE_RESERVATIONS = """```python
def book(pid):
    return reserve(pid)

for pid in ("p-100", "p-102", "p-104"):
    try:
        book(pid)
    except ToolError as exc:
        print("refused:", exc)
```"""


def test_a_third_reservation_is_refused_at_run_time_and_audited(
    shop: ModuleType, tmp_path: Path
) -> None:
    from safeexec.session.session import Session

    with Session(policy=shop.POLICY, state_dir=tmp_path) as session:
        session.grant(shop.reserve)
        outcome = session.run(REPLY_WITH_THREE_RESERVATIONS)
    assert outcome.result is not None and outcome.result.status is ExecStatus.OK
    assert [e.kind for e in outcome.event.side_effects] == [
        "tool_called",
        "tool_called",
        "tool_refused",
    ]
    assert [r["product_id"] for r in shop.RESERVATIONS] == ["p-100", "p-102"]
    assert "refused: call limit reached for 'reserve'" in outcome.observation.text
