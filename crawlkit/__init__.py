"""crawlkit: an importance-ordered batch web crawler on Apache Spark and Delta Lake."""

__version__ = "0.1.0"
