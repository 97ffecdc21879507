# Two set-up commands: `make run` and `make test`. Each creates .venv and installs what it needs:
# `make run` the app and the trainer its local jobs run (no test tools), `make test` adds them.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TYPED  := runai_tui runai_local trainer

# On a machine without an NVIDIA driver, PyTorch's CPU wheels are asked for first: the same torch
# without ~4 GB of CUDA libraries. pip skips an index it cannot reach (one short try), so a machine
# that has only the default index gets the default (CUDA) wheel as before. TORCH_INDEX= turns it off.
TORCH_INDEX ?= $(if $(shell command -v nvidia-smi 2>/dev/null),,https://download.pytorch.org/whl/cpu)
PIP_INSTALL := $(BIN)/python -m pip install -q $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX) --retries 0 --timeout 15)

.PHONY: run test check lint format bench docs clean test-torch test-pythons

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10) and "Python 3.10+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Reinstall whenever pyproject.toml changes.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[trainer]'
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -e '.[trainer,test]'
	@touch $@ $(VENV)/.installed-run

run: $(VENV)/.installed-run
	$(BIN)/runai-tui $(ARGS)

# The suite runs on every core and two workers more (pytest-xdist, pyproject.toml and tests/conftest.py); PYTEST_ARGS="-n 0" runs it in one process.
test: $(VENV)/.installed-test lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop: the lint and every test not marked slow (none trains a model, drives a real
# terminal or runs a multi-process job on the local cluster). `make test` runs them all, as CI does.
# ruff first (a fraction of a second); mypy, the lint's long part and on one core, runs beside
# the tests, its report printed after theirs; check fails when either does.
check: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(BIN)/mypy $(TYPED) > $(VENV)/mypy.out 2>&1 & mypy=$$!; \
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS); tests=$$?; \
	wait $$mypy; types=$$?; echo "mypy $(TYPED)"; cat $(VENV)/mypy.out; \
	test $$tests -eq 0 -a $$types -eq 0

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy $(TYPED)

format: $(VENV)/.installed-test
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The trainer and Flight Recorder tests against another torch build, in a venv of its own:
#   make test-torch TORCH="torch==2.8.0 torchvision==0.23.0"   (pip requirement specifiers or wheel files)
TORCH ?= torch==2.8.0 torchvision==0.23.0
test-torch:
	PYTHON=$(PYTHON) scripts/test-torch.sh $(TORCH)

# The whole suite on each Python the project supports (pyenv's, else python3.X on PATH).
PYTHONS ?= 3.10 3.11 3.12 3.13
test-pythons:
	scripts/test-pythons.sh $(PYTHONS)

# The suite (benchmarks/run.py): every figure a ratio against a yardstick measured in the same run.
# BENCH_ARGS="--only cli", "--reference-dir DIR" (the trainer figure), "--quick"; report in out/bench/;
# a whole run (no --only, no --quick) also writes its table into docs/performance.md, "The figures",
# records the suite's CPU-seconds in benchmarks/suite_cpu.json (the suite-cpu figure),
# and its rows into the README's Performance table.
bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/run.py --doc docs/performance.md --doc README.md $(BENCH_ARGS)

# The generated parts of the docs, made again: the field, lint-rule and diagnose-code tables of
# docs/profiles.md and docs/health.md, the trainer's flag table (runai_tui/trainer_flags/table.py, from
# trainer/config.py) and the README's screenshots (docs/screenshots/).
docs: $(VENV)/.installed-test
	$(BIN)/python -m runai_tui.profiles.docs docs/profiles.md
	$(BIN)/python -m runai_tui.knowledge.docs docs/profiles.md docs/health.md
	$(BIN)/python scripts/trainer_flags.py
	$(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) .venv-* .pytest_cache .ruff_cache
