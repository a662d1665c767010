"""Adaptive OPIC (Abiteboul, Preda, Cobena, WWW 2003), as the Nutch proposal describes it.

Every page has *cash* C (``opic_cash``) and *history* H (``opic_history``); a **virtual
page** is linked both ways with every page. Total cash, virtual page included, is 1 and
stays 1: cash only moves, it is never created. That is what Nutch's partial OPIC got wrong
(each fetch added cash, so refetched pages inflated and the total grew).

* **inject** (:func:`opic_inject`): the virtual page starts with cash 1.0 and hands it out
  as 1/n to the n seeds. A later inject gives its m new seeds the virtual page's *current*
  cash V (V/m each) and leaves the virtual page at 0; when V is 0 (it was handed out last
  round) the new seeds start at 0 and get their uniform share at the next round, like every
  page. Either way no cash is made: the total stays 1.
* **processing** a page fetched in the segment (:class:`OpicScorer`): its cash C goes to its
  out-links, ``scoring.opic_virtual_share`` of it to the virtual page and the rest split
  equally among its distinct out-links to known pages (all of it to the virtual page from a
  page without any); its history records C; its cash drops to 0; ``last_processed = now``.
  A final answer without a page (404, gone, denied, non-HTML) processes it as a page without
  links; only pages whose fetch failed for now (retry, skipped) keep their cash. A
  ``duplicate`` page, which generate never picks again, is processed every round as a page
  without links: its in-links and the teleport keep paying it, and cash parked there for good
  would drain the rest of the crawl. All processed pages send the cash they held at the start
  of the round (one synchronous step).
* then the **virtual page** is processed: its cash (what it held plus what it just
  received) flows uniformly to all known pages, as its links to every page say, and its
  history records it. This is OPIC's teleport: with share s it behaves as PageRank with
  damping 1 - s.
* **time window** T (``scoring.opic_window`` seconds, 0 = none): with Δ = now - last
  processing, a processed page's history becomes H <- C * T/Δ if Δ >= T, else
  H <- C + H * (T - Δ)/T (the README's formula; the proposal's worked example "10 * (6/3) =
  5.0" inverts the ratio: T/Δ = 3/6). A page processed for the first time uses Δ = T (H <- C).
  Without a window H <- H + C.
* **importance** = (H + C) / (G + 1), G the total history (virtual page included): the
  shares of all pages sum to 1. The virtual page's own score is written as 0 so it never
  sorts into a fetch list.

The virtual page is a crawldb row with the reserved URL :data:`VIRTUAL_URL` (status gone,
due in year 9999, ``metadata['virtual'] = 'true'``), so its cash is committed in the same
Delta MERGE as the pages' cash and the invariant holds after any crash. Other stages drop
it with :func:`crawlkit.scoring.base.real_pages`.

Example::

    rows = opic_inject(new_seed_rows, crawldb)      # seeds with cash + the virtual row: upsert
    scores = get_scorer("opic").score(ctx)         # url, score, opic_cash, opic_history, ...
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.scoring.base import VIRTUAL_URL, BaseScorer, ScoringContext, real_pages, register
from crawlkit.scoring.links import prepare_links
from crawlkit.status import ANSWERED, Status

VIRTUAL_HOST = "crawlkit.invalid"      # .invalid never resolves (RFC 2606)
FAR_FUTURE = datetime(9999, 12, 31)
STATE = ("opic_cash", "opic_history", "last_processed")
# Fetch outcomes that count as "processing" a page: every answer for the page as it is now
# (crawlkit.status.ANSWERED). A page answering 404, denied or non-HTML is processed as a page
# without links, so its cash goes to the virtual page; left unprocessed, such pages kept their
# cash and gained more every round (in-links and the teleport) without ever passing it on,
# until they held most of it (67% of all cash after 10 rounds of a simulated crawl with 8%
# of URLs 404). Only transient failures (retry, skipped) leave a page's cash where it is.
PROCESSED_FETCH_STATUSES = tuple(s.value for s in ANSWERED)
# Crawldb statuses processed every round, fetched or not, as pages without links: pages whose
# links do not vote (crawlkit.scoring.links: a duplicate's are its kept copy's, a gone page has
# none). Processed only when answered, they would gather cash between their rare rechecks and
# never pass it on; a page gone after db.retry_max transient failures is never answered at
# all. (An evicted page keeps its cash: the estimate it builds up is how it earns its way
# back into the limited buffer.)
ALWAYS_PROCESSED = (Status.DUPLICATE.value, Status.GONE.value)


def virtual_page_row(spark: SparkSession, cash: float, history: float = 0.0,
                     last_processed: datetime | None = None) -> DataFrame:
    """The virtual page as one crawldb row (declared schema)."""
    row = dict(url=VIRTUAL_URL, host=VIRTUAL_HOST, domain=None, status="gone",
               fetch_time=FAR_FUTURE, retries=0, fetch_interval=0, score=0.0, scores={},
               opic_cash=float(cash), opic_history=float(history), last_processed=last_processed,
               change_count=0, check_count=0, depth=-1, metadata={"virtual": "true"},
               schema_version=schemas.version("crawldb"))
    return schemas.frame(spark, "crawldb", [row])


def virtual_state(crawldb: DataFrame) -> dict | None:
    """The virtual page's (cash, history, last_processed), or None when the row is missing."""
    rows = (crawldb.filter(F.col("url") == F.lit(VIRTUAL_URL))
            .select(*STATE).limit(1).collect())
    return rows[0].asDict() if rows else None


def opic_inject(new_seeds: DataFrame, crawldb: DataFrame | None = None) -> DataFrame:
    """Cash for newly injected seeds, taken from the virtual page; upsert the result.

    ``new_seeds`` has crawldb columns (at least url; the three OPIC columns are added when
    missing). Returns the seeds that are not in
    ``crawldb`` yet, with ``opic_cash`` = V/m, ``opic_history`` = 0 and ``last_processed``
    null, plus the virtual page's row (same columns) with cash 0, where V is the virtual
    page's cash: 1.0 for a new crawl, else whatever it holds now. Inject MERGEs these rows by
    url (insert new, update the virtual row) in one commit, so total cash stays 1.
    """
    spark = new_seeds.sparkSession
    seeds = new_seeds.dropDuplicates(["url"]).filter(F.col("url") != F.lit(VIRTUAL_URL))
    current = None
    if crawldb is not None:
        seeds = seeds.join(crawldb.select("url"), on="url", how="left_anti")
        current = virtual_state(crawldb)
    if current is None:
        known_cash = 0.0
        if crawldb is not None:
            known_cash = real_pages(crawldb).agg(F.sum("opic_cash")).first()[0] or 0.0
        current = {"opic_cash": max(0.0, 1.0 - known_cash), "opic_history": 0.0,
                   "last_processed": None}
    columns = new_seeds.columns + [c for c in STATE if c not in new_seeds.columns]
    m = seeds.count()
    share = current["opic_cash"] / m if m else 0.0
    seeds = seeds.select(*[
        (F.lit(share) if c == "opic_cash" else F.lit(0.0) if c == "opic_history"
         else F.lit(None).cast("timestamp") if c == "last_processed" else F.col(c)).alias(c)
        for c in columns])
    if m == 0:
        return seeds
    virtual = virtual_page_row(spark, 0.0, current["opic_history"], current["last_processed"])
    return seeds.unionByName(virtual.select(*columns))


def history_update(history: Column, cash: Column, last_processed: Column, now: datetime,
                   window: int) -> Column:
    """H after processing a page that held ``cash``: H + C, or the time-window rule."""
    if window <= 0:
        return history + cash
    t = float(window)
    raw = (F.lit(now).cast("timestamp").cast("long") - last_processed.cast("long")).cast("double")
    delta = F.greatest(F.lit(0.0), F.coalesce(raw, F.lit(t)))   # never processed: Δ = T, H = C
    return F.when(delta >= F.lit(t), cash * F.lit(t) / delta).otherwise(
        cash + history * (F.lit(t) - delta) / F.lit(t))


def history_value(history: float, cash: float, delta: float | None, window: int) -> float:
    """:func:`history_update` for one page in Python (the virtual page's row)."""
    if window <= 0:
        return history + cash
    delta = float(window) if delta is None else delta
    if delta >= window:
        return cash * window / delta
    return cash + history * (window - delta) / window


@register
class OpicScorer(BaseScorer):
    """Adaptive OPIC: moves cash by one segment; score = (H + C) / (G + 1)."""

    name = "opic"
    state_columns = STATE
    needs_segment = True

    def score(self, ctx: ScoringContext) -> DataFrame:
        conf, now = ctx.conf, ctx.now
        share = float(conf["scoring.opic_virtual_share"])
        window = int(conf["scoring.opic_window"])
        pages = real_pages(ctx.crawldb).select("url", *STATE)
        virtual = virtual_state(ctx.crawldb)
        if virtual is None:
            virtual, pages = bootstrap(real_pages(ctx.crawldb))
        linkless = (real_pages(ctx.crawldb).filter(F.col("status").isin(*ALWAYS_PROCESSED))
                    .select("url", F.lit(True).alias("linkless")))

        processed = (ctx.processed.select("url").distinct().withColumn("proc", F.lit(True))
                     if ctx.processed is not None
                     else pages.select("url", F.lit(True).alias("proc")).limit(0))
        state = (pages.join(processed, on="url", how="left").join(linkless, on="url", how="left")
                 .withColumn("linkless", F.coalesce(F.col("linkless"), F.lit(False)))
                 .withColumn("proc", F.coalesce(F.col("proc"), F.lit(False)) | F.col("linkless"))
                 .cache())

        # Votes go only to known pages, so no cash leaves the system with an unknown target.
        known = state.select(F.col("url").alias("dst"))
        edges = (prepare_links(ctx.links, conf, crawldb=real_pages(ctx.crawldb))
                 .select("src", "dst").join(known, on="dst", how="inner"))
        outdeg = edges.groupBy("src").agg(F.count(F.lit(1)).alias("deg"))
        senders = (state.filter(F.col("proc"))
                   .select(F.col("url").alias("src"), F.col("opic_cash").alias("c"), "linkless")
                   .join(outdeg, on="src", how="left")
                   .withColumn("deg", F.when(~F.col("linkless"), F.col("deg"))))
        received = (edges.join(senders.filter(F.col("deg").isNotNull()), on="src", how="inner")
                    .groupBy(F.col("dst").alias("url"))
                    .agg(F.sum(F.col("c") * F.lit(1.0 - share) / F.col("deg")).alias("recv")))
        to_virtual = senders.agg(F.sum(
            F.when(F.col("deg").isNull(), F.col("c")).otherwise(F.col("c") * F.lit(share)))
        ).first()[0] or 0.0
        n = state.count()
        v_cash = virtual["opic_cash"] + to_virtual
        teleport = v_cash / n if n else 0.0

        mid = state.join(received, on="url", how="left")
        recv = F.coalesce(F.col("recv"), F.lit(0.0))
        proc = F.col("proc")
        new_cash = F.when(proc, recv).otherwise(F.col("opic_cash") + recv) + F.lit(teleport)
        new_hist = F.when(proc, history_update(F.col("opic_history"), F.col("opic_cash"),
                                               F.col("last_processed"), now, window)
                          ).otherwise(F.col("opic_history"))
        new_last = F.when(proc, F.lit(now).cast("timestamp")).otherwise(F.col("last_processed"))
        updated = mid.select("url", new_cash.alias("opic_cash"), new_hist.alias("opic_history"),
                             new_last.alias("last_processed"))

        # The virtual page is processed every round: its cash went out uniformly above.
        if n:
            last = virtual["last_processed"]
            delta = None if last is None else max(0.0, (now - last).total_seconds())
            v_row = (VIRTUAL_URL, 0.0, history_value(virtual["opic_history"], v_cash, delta, window), now)
        else:
            v_row = (VIRTUAL_URL, v_cash, virtual["opic_history"], virtual["last_processed"])
        virtual_row = ctx.spark.createDataFrame(
            [v_row], "url string, opic_cash double, opic_history double, last_processed timestamp")
        # Checkpointed: the result no longer depends on the crawldb files the MERGE rewrites.
        everything = updated.unionByName(virtual_row).localCheckpoint(eager=True)
        g = everything.agg(F.sum("opic_history")).first()[0] or 0.0
        importance = F.when(F.col("url") == F.lit(VIRTUAL_URL), F.lit(0.0)).otherwise(
            (F.col("opic_history") + F.col("opic_cash")) / F.lit(g + 1.0))
        state.unpersist()
        return everything.select("url", importance.alias("score"), *STATE)


def bootstrap(pages: DataFrame) -> tuple[dict, DataFrame]:
    """Virtual state and page cash for a crawldb without the virtual row (a crawl started
    under another scorer): the virtual page holds whatever cash is missing from 1; if no page
    has cash or history at all, the seeds (depth 0; else every page) get 1/n now, as inject
    would have done."""
    state = pages.select("url", *STATE)
    total = pages.agg(F.sum("opic_cash"), F.sum("opic_history")).first()
    cash = total[0] or 0.0
    virtual = {"opic_cash": max(0.0, 1.0 - cash), "opic_history": 0.0, "last_processed": None}
    if cash > 0 or (total[1] or 0.0) > 0:
        return virtual, state
    seeds = pages.filter(F.col("depth") == 0)
    if seeds.limit(1).count() == 0:
        seeds = pages
    m = seeds.count()
    if m == 0:
        return virtual, state
    seed_urls = seeds.select("url", F.lit(True).alias("seed"))
    state = (pages.join(seed_urls, on="url", how="left")
             .select("url", F.when(F.col("seed"), F.lit(1.0 / m)).otherwise(F.lit(0.0))
                     .alias("opic_cash"), "opic_history", "last_processed"))
    return {**virtual, "opic_cash": 0.0}, state
