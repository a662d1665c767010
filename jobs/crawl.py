"""spark-submit entry point for `crawlkit crawl`: spark-submit jobs/crawl.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["crawl", *sys.argv[1:]]))
