"""Playing against agents: in the terminal (:mod:`train.play.terminal`)."""
