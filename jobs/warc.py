"""spark-submit entry point for `crawlkit warc`: spark-submit jobs/warc.py --out DIR [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["warc", *sys.argv[1:]]))
