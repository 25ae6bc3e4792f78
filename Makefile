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

.PHONY: setup setup-dev torch train test test-slow bench lint docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# pip shows its progress here: the training extra brings PyTorch, a download of minutes
setup: $(BIN)/python torch
	@echo "Installing llama-rl with its training and web extras (PyTorch, stable-baselines3...): this can take minutes."
	$(BIN)/python -m pip install --progress-bar on -e ".[train,web]"

torch: $(BIN)/python
ifeq ($(TORCH),cpu)
	@echo "Installing PyTorch's CPU-only build from $(TORCH_CPU_INDEX)"
	$(BIN)/python -m pip install --progress-bar on torch --index-url $(TORCH_CPU_INDEX)
else ifneq ($(TORCH),default)
	$(error TORCH must be cpu or default, got '$(TORCH)')
endif

setup-dev: $(BIN)/python torch
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
	$(BIN)/ruff check llama_env agents train benchmarks tests
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m pytest -n 2 -q

# The documentation site, served at http://127.0.0.1:8001/ while you edit it
docs: setup-dev
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8001

test-slow: setup-dev
	$(BIN)/python -m pytest -m slow -q

bench: setup
	$(BIN)/python benchmarks/env_speed.py
	$(BIN)/python benchmarks/eval_speed.py
	$(BIN)/python benchmarks/train_speed.py

lint: setup-dev
	$(BIN)/ruff check llama_env agents train benchmarks tests
	$(BIN)/ruff format --check llama_env agents train benchmarks tests
	$(BIN)/mypy
