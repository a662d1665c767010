"""spark-submit entry point for `crawlkit inject`: spark-submit jobs/inject.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["inject", *sys.argv[1:]]))
