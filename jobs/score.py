"""spark-submit entry point for `crawlkit score`: spark-submit jobs/score.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["score", *sys.argv[1:]]))
