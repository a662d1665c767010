"""spark-submit entry point for `crawlkit updatedb`: spark-submit jobs/updatedb.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["updatedb", *sys.argv[1:]]))
