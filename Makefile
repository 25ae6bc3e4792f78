# The two commands of the README. Both create .venv (with the machine's python3) and
# install the package into it first, so they work on a fresh clone.
#
# TORCH=cpu installs PyTorch's CPU-only build first, from PyTorch's own package index
# (about 200 MB instead of the default CUDA build's several GB): make train TORCH=cpu
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH ?= default
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
# the folders ruff checks (make test) and checks the format of (make lint)
CHECKED := llama_env agents train benchmarks tests docs/_hooks notebooks

.PHONY: setup setup-dev torch train test test-slow bench lint docs python-version

# llama-rl needs Python 3.10 or newer: PYTHON names another interpreter (make train
# PYTHON=python3.12); a .venv made with an older one is refused, not reused
NEW_ENOUGH := import sys; sys.exit(sys.version_info < (3, 10))

$(BIN)/python:
	@$(PYTHON) -c '$(NEW_ENOUGH)' || { echo "llama-rl needs Python 3.10 or newer, and "$(PYTHON) --version" says: $$($(PYTHON) --version 2>&1 | tail -n 1). Name another, as in make $(or $(MAKECMDGOALS),train) PYTHON=python3.12"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

python-version: $(BIN)/python
	@$(BIN)/python -c '$(NEW_ENOUGH)' || { echo "$(VENV) was made with $$($(BIN)/python --version 2>&1), and llama-rl needs Python 3.10 or newer: remove it (rm -rf $(VENV)) and run make again with a newer one (PYTHON=python3.12)"; exit 1; }

# pip shows its progress here: the training extra brings PyTorch, a download of minutes
setup: python-version torch
	@echo "Installing llama-rl with its training and web extras (PyTorch, stable-baselines3...): this can take minutes."
	$(BIN)/python -m pip install --progress-bar on -e ".[train,web]"

torch: python-version
ifeq ($(TORCH),cpu)
	@echo "Installing PyTorch's CPU-only build from $(TORCH_CPU_INDEX)"
	$(BIN)/python -m pip install --progress-bar on torch --index-url $(TORCH_CPU_INDEX)
else ifneq ($(TORCH),default)
	$(error TORCH must be cpu or default, got '$(TORCH)')
endif

setup-dev: python-version torch
	$(BIN)/python -m pip install -q -e ".[dev]"

# The main job: train a small agent for a few minutes, then print its evaluation
# table against random and heuristic next to the shipped agent's.
train: setup
	$(BIN)/llama-rl train
	@echo "llama-rl and python are installed in $(VENV): run 'source $(BIN)/activate' for the commands above (or call $(BIN)/llama-rl)"

# The default test run: the linters and the type checker, the documentation site (a
# broken link or an unreadable docstring fails it), then the tests (slow training tests
# excluded; run them with `make test-slow`).
test: setup-dev
	$(BIN)/ruff check $(CHECKED)
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -n 2 -q

# The documentation site, served at http://127.0.0.1:8001/ while you edit it
docs: setup-dev
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

test-slow: setup-dev
	$(BIN)/python -m pytest -m slow -q

# The engine's, evaluation's and the trainer's speed at the settings of docs/speed.md's
# figures: the commands that page shows, as it writes them (train_speed's --steps 300000
# is its default, kept on purpose), about four minutes on two cores. It installs no
# OpenSpiel: env_speed skips its OpenSpiel rows unless `pip install open_spiel` put it in
# $(VENV) first
bench: setup
	$(BIN)/python benchmarks/env_speed.py
	$(BIN)/python benchmarks/eval_speed.py --scalar-games 5000
	$(BIN)/python benchmarks/train_speed.py --steps 300000

lint: setup-dev
	$(BIN)/ruff check $(CHECKED)
	$(BIN)/ruff format --check $(CHECKED)
	$(BIN)/mypy
