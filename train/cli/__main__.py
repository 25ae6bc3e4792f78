"""``python -m train.cli``: the ``llama-rl`` command."""

import sys

from train.cli import main

sys.exit(main())
