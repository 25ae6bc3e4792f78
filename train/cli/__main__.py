"""``python -m train.cli``: the ``llama-rl`` command."""

from train.launch import run

run()
