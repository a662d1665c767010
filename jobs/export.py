"""spark-submit entry point for `crawlkit export`: spark-submit jobs/export.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:]]))
