"""The package's version, declared once: ``pyproject.toml`` reads it, ``llama_env``
exports it, and the engine's own modules (the install hint) import it from here without
importing the package."""

__version__ = "0.3.0.dev0"
