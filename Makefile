# Two commands on a fresh machine: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit install demo bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/studiolo run

demo: $(STAMP)
	$(BIN)/studiolo demo

lint: $(STAMP)
	$(BIN)/ruff check studiolo tests bench
	$(BIN)/ruff format --check studiolo tests bench

typecheck: $(STAMP)
	$(BIN)/mypy studiolo

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/commit.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
