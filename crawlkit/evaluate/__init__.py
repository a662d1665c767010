"""Evaluation of crawl orderings (Cho, Garcia-Molina & Page): how early a crawl found the
pages that matter, measured against the full web graph. See docs/evaluation.md.

Names load on first use (PEP 562), so the CLI can build its parser from
``crawlkit.evaluate.cli`` without importing numpy, scipy and matplotlib.

Example::

    from crawlkit.evaluate import evaluate_crawl, compare
    results = [evaluate_crawl(f"crawls/{o}", "hollins/links.tsv.gz", o)
               for o in ("bfs", "backlinks", "pagerank")]
    markdown, figure = compare(results)
"""
from importlib import import_module

_HOMES = {
    "EvaluationResult": "evaluation", "evaluate_crawl": "evaluation", "evaluate_order": "evaluation",
    "compare": "report", "DEFAULT_FRACTIONS": "report",
    "Web": "web", "load_web": "web", "read_buffer": "crawl", "read_round_estimates": "crawl",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
