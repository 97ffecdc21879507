# Two set-up commands: `make run` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint format bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10) and "Python 3.10+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[trainer,test]'
	@touch $@

run: $(VENV)/.installed
	$(BIN)/runai-tui $(ARGS)

test: $(VENV)/.installed lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy runai_tui trainer

format: $(VENV)/.installed
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The suite (benchmarks/run.py): every figure a ratio against a yardstick measured in the same run.
# BENCH_ARGS="--only cli", "--reference-dir DIR" (the trainer figure), "--quick"; report in out/bench/.
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
