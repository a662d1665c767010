"""The fetcher: fetch one partition of a fetch list politely and safely.

Public API: :func:`fetch_partition` and :class:`FetchStats`; see docs/fetcher.md.
"""
from crawlkit.fetch.fetcher import fetch_partition
from crawlkit.fetch.stats import FetchStats

__all__ = ["FetchStats", "fetch_partition"]
