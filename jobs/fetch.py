"""spark-submit entry point for `crawlkit fetch`: spark-submit jobs/fetch.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["fetch", *sys.argv[1:]]))
