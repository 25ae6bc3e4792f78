"""Playing against agents: in the terminal (:mod:`train.play.terminal`) and in the browser
(:mod:`train.play.web`, ``llama-rl serve``)."""

WEB_REQUIRES = ("starlette", "uvicorn", "openskill")
"""The ``web`` extra's packages the browser app needs, its own package first (the one a
missing extra is named by): checked before a server starts, so that a missing one is the
usual line naming the extra; openskill rates the History page's games, and is otherwise
imported only when that page is read."""
