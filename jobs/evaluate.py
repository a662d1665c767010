"""spark-submit entry point for `crawlkit evaluate`: spark-submit jobs/evaluate.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
