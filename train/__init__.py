"""Training, evaluation and the ``llama-rl`` command line for LLAMA-RL."""
