"""spark-submit entry point for `crawlkit sitemaps`: spark-submit jobs/sitemaps.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["sitemaps", *sys.argv[1:]]))
