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

.PHONY: setup setup-test demo test test-fast test-rungs lint bench ablation agentdojo clean

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

setup: $(STAMP)

setup-test: $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/python -m safeexec.demo

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# The escape suite (native and restricted in the worker) on each rung below full, each in an
# environment tests/rungs/launcher.py simulates (needs root; no container daemon). The full
# rung's run is `make test`'s. Runs every environment; fails if any run failed. test_as_non_root
# drives a run as nobody through `unshare --mount`, which a container refuses: the `nobody`
# environment here is that run.
RUNG_ENVS ?= container-root container-nobody nobody
test-rungs: $(TEST_STAMP)
	@status=0; for env in $(RUNG_ENVS); do \
		echo "== tests/escapes on $$env"; \
		PYTHONPATH=tests/rungs $(BIN)/python tests/rungs/launcher.py --env $$env -- \
			$(BIN)/python -m pytest -q -rfE -p no:cacheprovider -p traversable_tmp \
			--basetemp=/tmp/safeexec-rungs-$$env tests/escapes \
			--deselect tests/escapes/test_as_non_root.py \
			-k "not restricted-in-process" || status=1; \
	done; exit $$status

lint: $(TEST_STAMP)
	$(BIN)/ruff check safeexec tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/summary.py --readme README.md

# The format x mode ablation (benchmarks/ablation): full size, local worker processes; prints the
# table and writes results.json, results.md and PNG charts to ablation-results/.
ablation: $(STAMP)
	$(BIN)/python -m benchmarks.ablation --size full --out ablation-results

# AgentDojo's four suites through the harness (benchmarks/ablation/agentdojo.py): oracle and
# gullible agents, broad grants vs scoped capabilities; prints the table, writes the rows.
agentdojo: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.ablation.agentdojo --out agentdojo-results.json

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
