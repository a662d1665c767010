"""spark-submit entry point for `crawlkit maintain`: spark-submit jobs/maintain.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["maintain", *sys.argv[1:]]))
