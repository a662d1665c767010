"""The scorer interface, the registry of scorers and the combiner.

This is crawlkit's counterpart of Nutch's ``ScoringFilter``: every way of scoring pages
(PageRank, Adaptive OPIC, backlink count, ...) sits behind one small interface, so the crawl
loop never knows which one runs, and ``scoring.scorer = "opic"`` in conf swaps the crawl's
order in one line. The interface carries the explanations; each implementation stays short.

Two kinds of scorer exist, as in Nutch:

* **global** scorers (PageRank, HITS, backlinks, ...) recompute every page's score from the
  whole link table each time. Running one twice gives the same answer: they are idempotent.
* **incremental** scorers (Adaptive OPIC) move state forward by one segment: they own
  crawldb columns (``opic_cash``, ``opic_history``, ``last_processed``) and must see each
  segment exactly once. They set ``needs_segment = True``; the job
  (:func:`crawlkit.scoring.job.run_scoring`) then refuses to run them without a segment and
  skips a segment whose scoring commit is already in the crawldb's history.

Importance vs ordering (Cho et al.): a scorer only computes a metric. Whether that metric is
used as the *ordering* metric (what generate sorts by: ``scoring.scorer``, or the combination
``scoring.combine``) or as the *importance* metric (what ``crawlkit evaluate`` measures a crawl
against: ``scoring.importance``, computed there on the whole web: PageRank or backlinks) is
decided by conf, never by the scorer. Every scorer's
output is kept in the crawldb's ``scores`` map under its name; :func:`combine` turns that map
into the ``score`` column generate sorts by.

Example::

    scorer = get_scorer("pagerank")
    ctx = ScoringContext(spark, conf, now, crawldb=crawldb_df, links=links_df)
    scores = scorer.score(ctx)          # url, score
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Mapping, Protocol, runtime_checkable

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit.conf import Conf

# The Adaptive OPIC virtual page lives in the crawldb as a row with this reserved URL (not an
# http(s) URL, so no URL filter ever lets it into a fetch list). Stages that count, generate,
# export or evaluate pages filter it out with :func:`real_pages`.
VIRTUAL_URL = "crawlkit:virtual"


def real_pages(df: DataFrame, url_col: str = "url") -> DataFrame:
    """Drop the OPIC virtual page's row: every stage that works on web pages starts here."""
    return df.filter(F.col(url_col) != F.lit(VIRTUAL_URL))


@dataclass(frozen=True)
class ScoringContext:
    """Everything a scorer may read, passed in so scorers stay pure functions of their input.

    ``now`` is a parameter, never the clock: tests replay any history without sleeping.
    ``crawldb`` is the whole crawldb, virtual page included (only OPIC needs it); scorers that
    work on web pages use :attr:`pages`. ``links`` is the raw link table (schemas/links.json);
    link-analysis scorers pass it through :func:`crawlkit.scoring.links.prepare_links` so every
    one of them drops the same noise. ``processed`` (column ``url``) is the set of pages the
    segment fetched successfully, the pages whose cash OPIC distributes; ``texts`` (``url``,
    ``title``, ``text``) is the parse output the similarity metric reads. ``focus`` is the
    focused crawl's page state (:mod:`crawlkit.scoring.focus.state`), set when
    ``focus.words`` is. ``links_at_most`` bounds the rows of ``links`` from Delta's statistics
    (:func:`crawlkit.linkdb.stored_rows`): counting the current links themselves is a shuffle
    of the whole table.
    """

    spark: SparkSession
    conf: Conf
    now: datetime
    crawldb: DataFrame
    links: DataFrame
    processed: DataFrame | None = None
    texts: DataFrame | None = None
    segment: str | None = None
    focus: DataFrame | None = None   # url, hot, hot_distance, hot_link (focused crawl only)
    links_at_most: int | None = None  # rows of the link table as stored (>= links)

    @property
    def pages(self) -> DataFrame:
        """The crawldb without the virtual page."""
        return real_pages(self.crawldb)

    @property
    def seeds(self) -> DataFrame:
        """URLs injected as seeds (depth 0): PageRank's ``personalization = "seeds"``."""
        return self.pages.filter(F.col("depth") == 0).select("url")


@runtime_checkable
class Scorer(Protocol):
    """One page metric.

    ``name``            registry key and the key of its value in the crawldb ``scores`` map.
    ``state_columns``   crawldb columns the scorer owns and returns next to ``score`` (OPIC:
                        ``opic_cash``, ``opic_history``, ``last_processed``); the job writes
                        them in the same MERGE as the score, so state and score never part.
    ``needs_segment``   True for incremental scorers that must see each segment once.

    ``initial_score(conf)`` is the ordering score of a freshly injected seed before any
    scoring ran (inject calls it); ``score(ctx)`` returns a DataFrame with columns ``url``,
    ``score`` and the state columns, one row per page it scores. Pages it leaves out keep
    their previous value.
    """

    name: str
    state_columns: tuple[str, ...]
    needs_segment: bool

    def initial_score(self, conf: Conf) -> float: ...

    def score(self, ctx: ScoringContext) -> DataFrame: ...


class BaseScorer:
    """Defaults shared by the built-in scorers: a global metric with no state of its own."""

    name: str = ""
    state_columns: tuple[str, ...] = ()
    needs_segment: bool = False

    def initial_score(self, conf: Conf) -> float:
        return float(conf["inject.default_score"])

    def score(self, ctx: ScoringContext) -> DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<scorer {self.name}>"


_REGISTRY: dict[str, Callable[[], Scorer]] = {}
_BUILTIN_MODULES = ("pagerank", "opic", "hits", "backlinks", "forward", "location",
                    "similarity", "depth", "random_baseline",
                    "focus.uh", "focus.teh", "focus.tih", "focus.amh", "focus.rw", "focus.rwb",
                    "focus.learned")


def register(factory: Callable[[], Scorer]) -> Callable[[], Scorer]:
    """Class decorator: make a scorer available to :func:`get_scorer` under its ``name``."""
    name = getattr(factory, "name", "")
    if not name:
        raise ValueError(f"{factory!r} has no name")
    if name in _REGISTRY and _REGISTRY[name] is not factory:
        raise ValueError(f"scorer {name!r} registered twice")
    _REGISTRY[name] = factory
    return factory


def _load_builtins() -> None:
    for module in _BUILTIN_MODULES:
        importlib.import_module(f"crawlkit.scoring.{module}")


def get_scorer(name: str) -> Scorer:
    """A new instance of the scorer registered under ``name`` (ValueError lists the choices)."""
    _load_builtins()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise ValueError(f"unknown scorer {name!r}; known: {', '.join(list_scorers())}") from None


def list_scorers() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def metric_value(scores_map: Column, name: str) -> Column:
    """A metric from the ``scores`` map; 0 for a page the metric has not scored yet."""
    return F.coalesce(scores_map.getItem(name), F.lit(0.0))


def combine(scores_map: Column, conf: Conf | Mapping, active: str | None = None) -> Column:
    """The ordering score IC = sum of k_i * metric_i over ``scoring.combine``.

    With ``scoring.combine`` empty the ordering score is the active scorer's metric alone
    (``active``, default ``scoring.scorer``). A metric missing from a page's map counts 0, so
    a page discovered after the last scoring run sorts last rather than vanishing (null).

    Example::

        crawldb.withColumn("score", combine(F.col("scores"), conf))
    """
    weights = dict(conf["scoring.combine"]) or {active or conf["scoring.scorer"]: 1.0}
    terms = [F.lit(float(k)) * metric_value(scores_map, name) for name, k in sorted(weights.items())]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total.cast("double")
