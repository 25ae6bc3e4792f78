"""LLAMA-RL's upper layer: evaluation (:mod:`train.evaluation`), training
(:mod:`train.training`), play (:mod:`train.play`) and the ``llama-rl`` command line
(:mod:`train.cli`). It sits on :mod:`llama_env` and :mod:`agents`; nothing below
imports it."""
