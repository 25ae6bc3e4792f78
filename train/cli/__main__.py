"""``python -m train.cli``: the ``llama-rl`` command. (The installed ``llama-rl`` starts at
:func:`train.launch.run`, which also stands guard while the commands are imported.)"""

import sys

from train.cli import main

sys.exit(main())
