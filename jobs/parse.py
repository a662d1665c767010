"""spark-submit entry point for `crawlkit parse`: spark-submit jobs/parse.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["parse", *sys.argv[1:]]))
