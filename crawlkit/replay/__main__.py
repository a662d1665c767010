"""``python -m crawlkit.replay``: the same as ``crawlkit replay``."""

import sys

from .cli import main

sys.exit(main())
