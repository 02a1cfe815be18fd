"""``python -m loom_explorer.cli``: the ``loom-explorer`` command."""

import sys

from loom_explorer.cli import main

sys.exit(main())
