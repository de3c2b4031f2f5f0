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
# Editable installs are strict (a tree of links to the checkout's files, on sys.path as a plain
# directory) so that type checkers see the package; setuptools' default import hook they cannot.
# A strict tree does not see a file added or removed later: the file list below relinks it.
EDITABLE := --config-settings editable_mode=strict -e
PACKAGE_FILES := $(VENV)/.package-files
LINK_STAMP := $(VENV)/.linked
# The documentation site's tools (installed by `make docs` only).
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: setup setup-test demo test test-fast lint bench ablation agentdojo clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[dev,data]'
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[$(TEST_EXTRAS)]'
	touch $(TEST_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[bench]'
	touch $(BENCH_STAMP)

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[docs]'
	touch $(DOCS_STAMP)

ifneq ($(MAKECMDGOALS),clean)
$(shell mkdir -p $(VENV) && find safeexec policies -type f -not -path '*/__pycache__/*' | sort \
  > $(PACKAGE_FILES).new && { cmp -s $(PACKAGE_FILES).new $(PACKAGE_FILES) \
  || mv $(PACKAGE_FILES).new $(PACKAGE_FILES); }; rm -f $(PACKAGE_FILES).new)
endif

$(LINK_STAMP): $(PACKAGE_FILES) | $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps $(EDITABLE) .
	touch $(LINK_STAMP)

setup setup-test demo test test-fast lint bench ablation agentdojo docs: $(LINK_STAMP)

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
