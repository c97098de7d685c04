# Two commands on a fresh machine: `make run` and `make test`.
# What the machine must provide (bubblewrap, chromium, a running PostgreSQL) is installed or
# started by scripts/system.sh, or it stops at once and prints the one command that would.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TESTENV := $(VENV)/test.env

.PHONY: run test lint typecheck unit install system-run system-test demo bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

system-run:
	@bash scripts/system.sh run

system-test: | $(BIN)/python
	@bash scripts/system.sh test > $(TESTENV)

run: system-run $(STAMP)
	$(BIN)/studiolo run

demo: $(STAMP)
	$(BIN)/studiolo demo

lint: $(STAMP)
	$(BIN)/ruff check studiolo tests bench
	$(BIN)/ruff format --check studiolo tests bench

typecheck: $(STAMP)
	$(BIN)/mypy studiolo

# Every test, the whole engine study included (STUDIOLO_ENGINE_STUDY=0 leaves it out).
unit: $(STAMP) system-test
	set -a && . ./$(TESTENV) && set +a && STUDIOLO_ENGINE_STUDY=$${STUDIOLO_ENGINE_STUDY:-1} $(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/commit.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
