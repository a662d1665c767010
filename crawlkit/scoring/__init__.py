"""Scoring: page metrics behind one interface (see base.py), the combiner, and the job.

Example::

    from crawlkit.scoring import get_scorer, run_scoring
    counters = run_scoring(spark, "crawl", conf, now, segment="20240101000000")
"""
from crawlkit.scoring.base import (VIRTUAL_URL, BaseScorer, Scorer, ScoringContext, combine,
                                   get_scorer, list_scorers, real_pages, register)

__all__ = ["VIRTUAL_URL", "BaseScorer", "Scorer", "ScoringContext", "combine", "get_scorer",
           "list_scorers", "real_pages", "register", "run_scoring", "opic_inject"]


def __getattr__(name):
    # Lazy: the job and OPIC import Delta; importing the package must stay cheap.
    if name == "run_scoring":
        from crawlkit.scoring.job import run_scoring
        return run_scoring
    if name == "opic_inject":
        from crawlkit.scoring.opic import opic_inject
        return opic_inject
    raise AttributeError(name)
