"""spark-submit entry point for `crawlkit generate`: spark-submit jobs/generate.py [options]."""
import sys

from crawlkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["generate", *sys.argv[1:]]))
