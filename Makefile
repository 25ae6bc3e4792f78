# The two commands of the README. Both create .venv (with the machine's python3) and
# install the package into it first, so they work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup setup-dev train test test-slow bench lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

setup: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[train]"

setup-dev: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"

# The main job: train a small agent for a few minutes, then print its evaluation
# table against random and heuristic next to the shipped agent's.
train: setup
	$(BIN)/llama-rl train

# The default test run: the linters and the type checker, then the tests (slow training
# tests excluded; run them with `make test-slow`).
test: setup-dev
	$(BIN)/ruff check llama_env agents train benchmarks tests
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 -q

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
