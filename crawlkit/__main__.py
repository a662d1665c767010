"""``python -m crawlkit``: the same command line as the ``crawlkit`` script."""
import sys

from crawlkit.cli import main

sys.exit(main())
