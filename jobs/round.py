"""spark-submit entry point for `crawlkit round`: spark-submit jobs/round.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["round", *sys.argv[1:]]))
