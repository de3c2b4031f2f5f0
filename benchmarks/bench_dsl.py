"""The dsl mode's costs as ratios to baselines measured in the same run.

* **plan + compile**: parse, check, plan and compile each example in ``dsl/examples/`` against
  ``ast.parse`` of the Python the program compiles to (the same pipeline as Python text).
  Target: at most 2x.
* **run**: running a pipeline in the dsl mode against the same pipeline written as Python in the
  in-process restricted mode, with the same deterministic tools through the same gateway. The
  "dsl" column is a program run again (its check and code object cached by source, tool
  signatures and limits) against restricted Python run again (its compiled cell cached by
  source); the "cold" columns forget those caches, so the DSL parses, checks, plans, compiles and
  runs, and restricted Python is transformed and compiled again. Target: at most 1.5x, warm
  against warm and cold against cold.
* **one step**: what a session does per action in each mode — the static gate (for the DSL:
  parse, check, plan; for Python: the parse, the policy scan, the estimate) and then the run —
  with nothing cached (the gate's cache and each mode's compile cache forgotten).

Each row shows the fastest of many interleaved samples (as ``timeit`` advises: on a shared
machine the slower samples measure other processes); each summary's verdict is on the median
over examples of the ratio of per-example medians, with the fastest-based ratio beside it.
"""

from __future__ import annotations

import ast
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "dsl"))

from dsl_support import EXAMPLES, granted, signatures

from safeexec.backends.base import BackendSession, SessionSpec
from safeexec.backends.dsl import DslBackend
from safeexec.backends.restricted import RestrictedBackend
from safeexec.blobs import BlobStore
from safeexec.dsl.compiler import compile_program
from safeexec.dsl.front import check_source, forget_checks
from safeexec.dsl.parser import forget_parses
from safeexec.gate import check, clear_check_cache
from safeexec.model import Action, ExecRequest, ExecStatus, Limits, Verdict
from safeexec.policy.loader import load_policy
from safeexec.sandbox.restricted import executor as restricted_executor

# The same pipelines as restricted Python (results shown by the final expression).
PYTHON = {
    "shopping": """
budget = 15.0
items = search_products(query="usb-c cable", max_results=20)
affordable = [p for p in items if p["in_stock"] and p["price"] <= budget]
cheapest = min(affordable, key=lambda p: p["price"])
code = reserve(sku=cheapest["sku"], quantity=1)
{"reserved": cheapest["name"], "price": cheapest["price"], "confirmation": code}
""",
    "finance_portfolio_value": """
holdings = get_holdings(account="acct-1")
usd_eur = get_fx_rate(base="USD", quote="EUR")
total = 0.0
lines = []
for h in holdings[:8]:
    q = get_quote(ticker=h["ticker"])
    rate = usd_eur if q["currency"] == "USD" else 1.0
    value = h["shares"] * q["price"] * rate
    total += value
    lines += [f"{h['ticker']}: {value:.2f} EUR"]
{"lines": lines, "total_eur": round(total, 2)}
""",
    "travel_cheapest_trip": """
out = search_flights(origin="LIS", destination="BER", date="2026-05-02")
out = [f for f in out if f["stops"] <= 1]
back = search_flights(origin="BER", destination="LIS", date="2026-05-06")
back = [f for f in back if f["stops"] <= 1]
go = min(out, key=lambda f: f["price"])
ret = min(back, key=lambda f: f["price"])
hotels = search_hotels(city="BER", max_nightly=150.0)
stay = max(hotels, key=lambda h: h["stars"])
total = go["price"] + ret["price"] + 4 * stay["nightly"]
{"out": go["id"], "back": ret["id"], "hotel": stay["name"], "total": total}
""",
    "web_crawl_two_levels": """
start = open_page(url="https://docs.example/start")
titles = [start["title"]]
for a in start["links"][:3]:
    p = open_page(url=a)
    titles += [p["title"]]
    for b in p["links"][:3]:
        titles += [open_page(url=b)["title"]]
list(dict.fromkeys(titles))
""",
    "decoding_messages": """
plain = decode_base64(text=fetch_message(message_id="m1"))
shifted = fetch_message(message_id="m2")
caesar = ""
for i in range(len(shifted)):
    c = shifted[i]
    code = ord(c)
    if code >= 97 and code <= 122:
        caesar += chr((code - 97 - 3) % 26 + 97)
    elif code >= 65 and code <= 90:
        caesar += chr((code - 65 - 3) % 26 + 65)
    else:
        caesar += c
hexed = decode_hex(text=fetch_message(message_id="m3"))
{"m1": plain, "m2": caesar, "m3": hexed}
""",
}


Times = tuple[float, float]  # (fastest, median) seconds


def _interleaved(work: dict[str, Callable[[], object]], *, repeat: int) -> dict[str, Times]:
    for run in work.values():
        run()
    samples: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(repeat):
        for name, run in work.items():
            start = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - start)
    return {name: (min(v), statistics.median(v)) for name, v in samples.items()}


def plan_and_compile() -> list[tuple[str, Times, Times]]:
    tools = signatures({})
    rows = []
    for path in sorted(EXAMPLES.glob("*.dsl")):
        source = path.read_text(encoding="utf-8")
        result = check_source(source, tools)
        assert result.accepted and result.checked is not None, path
        python = ast.unparse(compile_program(result.checked))

        def dsl(source: str = source) -> object:
            forget_parses()  # cold: the parse and the check are part of what is measured
            forget_checks()
            checked = check_source(source, tools).checked
            assert checked is not None
            return compile_program(checked)

        medians = _interleaved({"dsl": dsl, "ast": functools.partial(ast.parse, python)}, repeat=40)
        rows.append((path.stem, medians["dsl"], medians["ast"]))
    return rows


def _forget_everything() -> None:
    """Nothing cached: the DSL's parse and check caches, the gate's, and restricted Python's
    compiled cells (a private cache of the executor: nothing public empties it)."""
    _forget_dsl()
    clear_check_cache()
    _forget_restricted()


def _forget_dsl() -> None:
    forget_parses()
    forget_checks()


def _forget_restricted() -> None:
    restricted_executor._COMPILED.clear()


def _runner(
    session: BackendSession, code: str, *, forget: Callable[[], None] | None = None
) -> Callable[[], object]:
    """One run of ``code``; ``forget`` empties that mode's caches first (a cold run)."""
    request = ExecRequest(action_id="bench", code=code, limits=Limits())

    def run() -> object:
        if forget is not None:
            forget()
        result = session.run(request)
        assert result.status is ExecStatus.OK, result.message
        return result

    return run


def run_times(workdir: Path) -> list[tuple[str, Times, Times, Times, Times]]:
    blobs = BlobStore(workdir / "blobs")
    dsl = DslBackend().open(SessionSpec(blobs=blobs, tools=granted({}), workdir=workdir / "d"))
    py = RestrictedBackend(in_process=True).open(
        SessionSpec(blobs=blobs, tools=granted({}), workdir=workdir / "r")
    )
    rows = []
    try:
        for name, python in PYTHON.items():
            source = (EXAMPLES / f"{name}.dsl").read_text(encoding="utf-8")
            medians = _interleaved(
                {
                    "dsl": _runner(dsl, source),
                    "dsl_cold": _runner(dsl, source, forget=_forget_dsl),
                    "restricted": _runner(py, python),
                    "restricted_cold": _runner(py, python, forget=_forget_restricted),
                },
                repeat=30,
            )
            rows.append(
                (
                    name,
                    medians["dsl"],
                    medians["dsl_cold"],
                    medians["restricted"],
                    medians["restricted_cold"],
                )
            )
    finally:
        dsl.close()
        py.close()
    return rows


def step_times(workdir: Path) -> list[tuple[str, Times, Times]]:
    policy = load_policy("default")
    caps = granted({})
    tools = signatures({})
    names = tuple(d.name for d in caps.describe())
    blobs = BlobStore(workdir / "blobs")
    dsl = DslBackend().open(SessionSpec(blobs=blobs, tools=caps, workdir=workdir / "d"))
    py = RestrictedBackend(in_process=True).open(
        SessionSpec(blobs=blobs, tools=granted({}), workdir=workdir / "r")
    )

    def dsl_step(source: str) -> Callable[[], object]:
        def step() -> object:
            _forget_everything()
            gate = check(Action.create(source, language="dsl"), policy, backend="dsl", tools=tools)
            assert gate.decision.verdict is Verdict.ALLOW and gate.checked_code is not None
            return _runner(dsl, gate.checked_code)()

        return step

    def python_step(code: str) -> Callable[[], object]:
        def step() -> object:
            _forget_everything()
            action = Action.create(code, language="python")
            gate = check(action, policy, backend="restricted", tool_names=names)
            assert gate.decision.verdict is Verdict.ALLOW, gate.findings
            assert gate.checked_code is not None
            return _runner(py, gate.checked_code)()

        return step

    rows = []
    try:
        for name, python in PYTHON.items():
            source = (EXAMPLES / f"{name}.dsl").read_text(encoding="utf-8")
            times = _interleaved({"dsl": dsl_step(source), "py": python_step(python)}, repeat=20)
            rows.append((name, times["dsl"], times["py"]))
    finally:
        dsl.close()
        py.close()
    return rows


def main() -> int:
    compiled = plan_and_compile()
    with tempfile.TemporaryDirectory() as tmp:
        runs = run_times(Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        steps = step_times(Path(tmp))
    print("dsl plan + compile vs ast.parse of the same pipeline as Python (fastest ms)")
    print(f"{'example':<28} {'plan+compile':>12} {'ast.parse':>9} {'ratio':>6}")
    for name, dsl, base in compiled:
        print(f"{name:<28} {dsl[0] * 1e3:>12.3f} {base[0] * 1e3:>9.3f} {dsl[0] / base[0]:>6.2f}")
    _summary([(d, b) for _, d, b in compiled], target=2.0)
    print()
    print("dsl run vs the same pipeline in restricted Python, in-process (fastest ms)")
    print("  warm: run again (check/compile cached in both modes); cold: nothing cached in either")
    print(
        f"{'example':<28} {'dsl':>8} {'restricted':>10} {'ratio':>6}"
        f" {'dsl cold':>9} {'restr. cold':>11} {'ratio':>6}"
    )
    for name, dsl, cold, base, base_cold in runs:
        print(
            f"{name:<28} {dsl[0] * 1e3:>8.3f} {base[0] * 1e3:>10.3f} {dsl[0] / base[0]:>6.2f}"
            f" {cold[0] * 1e3:>9.3f} {base_cold[0] * 1e3:>11.3f} {cold[0] / base_cold[0]:>6.2f}"
        )
    _summary([(d, b) for _, d, _, b, _ in runs], target=1.5)
    _summary([(c, b) for _, _, c, _, b in runs], target=1.5, label="cold")
    _summary([(c, b) for _, _, c, b, _ in runs], target=1.5, label="dsl cold vs restricted warm")
    print()
    print("one step, gate + run, nothing cached: dsl vs restricted Python (fastest ms)")
    print(f"{'example':<28} {'dsl':>8} {'restricted':>10} {'ratio':>6}")
    for name, dsl, base in steps:
        print(f"{name:<28} {dsl[0] * 1e3:>8.3f} {base[0] * 1e3:>10.3f} {dsl[0] / base[0]:>6.2f}")
    _summary([(d, b) for _, d, b in steps], target=1.5, label="step")
    return 0


def _summary(pairs: list[tuple[Times, Times]], *, target: float, label: str = "") -> None:
    fastest = statistics.median(d[0] / b[0] for d, b in pairs)
    median = statistics.median(d[1] / b[1] for d, b in pairs)
    name = f"median ratio of medians{', ' + label if label else ''}"
    print(
        f"{name} {median:.2f} (of fastest {fastest:.2f}; target <= {target:.2f}): "
        f"{_verdict(median <= target)}"
    )


def _verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    sys.exit(main())
