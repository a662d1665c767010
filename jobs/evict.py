"""spark-submit entry point for `crawlkit evict`: spark-submit jobs/evict.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["evict", *sys.argv[1:]]))
