# Quick start: `make demo` (set up + run the pipeline demo) and `make test` (set up + run the tests;
# `make test-fast` runs the unit lane only: it skips the slow suites of tests/conftest.py, among them
# tests/integration/ and tests/properties/, without collecting them).
# Both are idempotent: the virtual environment lives in .venv and is rebuilt when the project changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The optional extras whose faces the test suite exercises (installed by `make test`, not the demo).
TEST_EXTRAS := dev,data,service,ray,mcp,adapters,sdk-types,agentdojo
TEST_STAMP := $(VENV)/.installed-test
# The peers the benchmarks compare against (installed by `make bench` only).
BENCH_STAMP := $(VENV)/.installed-bench
# The documentation site's tools (installed by `make docs` only).
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: setup setup-test demo test test-fast lint bench ablation agentdojo clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,data]'
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $(TEST_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

setup: $(STAMP)

setup-test: $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/python -m safeexec.demo

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(TEST_STAMP)
	$(BIN)/ruff check safeexec tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/summary.py --readme docs/benchmarks.md

# The format x mode ablation (benchmarks/ablation): full size, local worker processes; prints the
# table and writes results.json, results.md and PNG charts to ablation-results/.
ablation: $(STAMP)
	$(BIN)/python -m benchmarks.ablation --size full --out ablation-results

# AgentDojo's four suites through the harness (benchmarks/ablation/agentdojo.py): oracle and
# gullible agents, broad grants vs scoped capabilities; prints the table, writes the rows.
agentdojo: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.ablation.agentdojo --out agentdojo-results.json

# The documentation site (mkdocs.yml): built into site/, every warning an error.
.PHONY: docs
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache
