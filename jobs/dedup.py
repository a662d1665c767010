"""spark-submit entry point for `crawlkit dedup`: spark-submit jobs/dedup.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["dedup", *sys.argv[1:]]))
