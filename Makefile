# Everything a fresh machine needs: `make demo` and `make test` create .venv and install.
# torch==2.13.0 is installed first on purpose: it is a CPU build available locally, while an
# unpinned torch (pulled in by transformers / sentence-transformers) would fetch a multi-GB
# CUDA build.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.spurious-installed
EXTRAS ?= encoder,hf,bench,test,spacy,ray
PYTEST_ARGS ?=

.PHONY: demo test test-slow test-all lint format bench clean install core-check mypy-baseline

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/spurious demo --out runs/demo

# The README's test command: everything except tests marked slow.
test: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -m "not slow" $(PYTEST_ARGS)

# pytest exits 5 when no test is marked slow; that is not a failure.
test-slow: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -m slow $(PYTEST_ARGS) || [ $$? -eq 5 ]

test-all: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest $(PYTEST_ARGS)

# ruff; the package's layers and the absence of import circles (import-linter, contracts
# in pyproject.toml); types (mypy: the contract modules clean, elsewhere no error beyond
# mypy-baseline.txt, which may only shrink: `mypy-baseline filter` fails on a new error
# and on a fixed one still listed; after fixing, run `make mypy-baseline`).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy src/spurious | $(VENV)/bin/mypy-baseline filter --baseline-path mypy-baseline.txt --no-colors --hide-stats
	! grep -nE '^src/spurious/((analysis|context|results|runner|inputs|verdict|rundir)\.py|artifacts/)' mypy-baseline.txt

format: $(STAMP)
	$(VENV)/bin/ruff format src tests bench
	$(VENV)/bin/ruff check --fix src tests bench

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/bench_encode.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_probe.py

# A fresh venv with the core install alone (no extras): `spurious analyses` and a tf-idf
# audit of SNLI dev must work (analyses needing an extra are skipped, naming it).
mypy-baseline: $(STAMP)
	$(VENV)/bin/mypy src/spurious | $(VENV)/bin/mypy-baseline sync --baseline-path mypy-baseline.txt

core-check:
	.ci/core_install_check.sh

clean:
	rm -rf $(VENV) .venv-core runs .pytest_cache
