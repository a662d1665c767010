"""spark-submit entry point for `crawlkit stats`: spark-submit jobs/stats.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["stats", *sys.argv[1:]]))
