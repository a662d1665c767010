"""``crawlkit top`` and ``crawlkit dump``: single pages, with the links that explain their score.

"The active score" is the crawldb's ``score`` column: the ordering score (the scorer named by
``scoring.scorer``, or the ``scoring.combine`` combination); the components each scorer wrote
are in ``scores``. It is what generate sorts by under ``generate.policy = score``; the default
policy interleaves it with other metrics (``generate.interleave``), so the next fetch list is
not simply ``top``'s list. Links come from the linkdb of the same snapshot, so they hold the
followable links updatedb kept (nofollow and per-page caps applied), with their anchors.
"""
from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from crawlkit.inspect.snapshot import Snapshot


def top(snap: Snapshot, n: int = 20) -> list[dict]:
    """The ``n`` pages with the highest score (ties by URL), with their inlink counts."""
    rows = (snap.crawldb.orderBy(F.desc("score"), "url").limit(n)
            .select("url", "host", "status", "score", "scores", "depth", "fetched_at").collect())
    urls = [r["url"] for r in rows]
    inlinks = {r["dst"]: r["count"] for r in
               snap.links.filter(F.col("dst").isin(urls)).groupBy("dst").count().collect()}
    return [{"rank": i, **r.asDict(), "scores": dict(sorted((r["scores"] or {}).items())),
             "inlinks": inlinks.get(r["url"], 0)}
            for i, r in enumerate(rows, start=1)]


def dump(snap: Snapshot, url: str, limit: int = 100) -> dict:
    """A URL's whole crawldb record (None when unknown), and its inlinks and outlinks with
    anchors and the other end's status and score, best-scored first, at most ``limit`` each."""
    record = snap.crawldb.filter(F.col("url") == url).collect()
    links = _links(snap, url, limit)
    return {
        "url": url,
        **snap.versions(),
        "record": record[0].asDict() if record else None,
        "inlinks": links["in"],
        "outlinks": links["out"],
    }


def _links(snap: Snapshot, url: str, limit: int) -> dict[str, dict]:
    """Both directions in one query: each link seen from ``url`` (a self-link is both an in-
    and an outlink), joined with the crawldb row of its other end, ranked and counted per
    direction."""
    sides = F.filter(F.array(F.when(F.col("dst") == url, F.struct(F.lit("in").alias("direction"),
                                                                  F.col("src").alias("other"))),
                             F.when(F.col("src") == url, F.struct(F.lit("out").alias("direction"),
                                                                  F.col("dst").alias("other")))),
                     lambda side: side.isNotNull())
    seen = (snap.links.filter((F.col("src") == url) | (F.col("dst") == url))
            .select(F.explode(sides).alias("side"), "anchor", "nofollow", "meta", "first_seen", "last_seen")
            .select("side.direction", "side.other", "anchor", "nofollow", "meta", "first_seen", "last_seen"))
    ends = snap.crawldb.select(F.col("url").alias("other"), F.col("status").alias("other_status"),
                               F.col("score").alias("other_score"))
    per_direction = Window.partitionBy("direction")
    ranked = (seen.join(ends, on="other", how="left")
              .withColumn("rank", F.row_number().over(per_direction.orderBy(F.desc_nulls_last("other_score"), "other")))
              .withColumn("total", F.count("*").over(per_direction))
              .filter(F.col("rank") <= max(limit, 1))   # one row carries the total at --limit 0
              .orderBy("direction", "rank").collect())
    out = {"in": {"total": 0, "links": []}, "out": {"total": 0, "links": []}}
    for r in ranked:
        name = "src" if r["direction"] == "in" else "dst"
        out[r["direction"]]["total"] = r["total"]
        if r["rank"] > limit:
            continue
        out[r["direction"]]["links"].append({
            name: r["other"], "anchor": r["anchor"], "nofollow": r["nofollow"], "meta": r["meta"],
            "first_seen": r["first_seen"], "last_seen": r["last_seen"],
            f"{name}_status": r["other_status"], f"{name}_score": r["other_score"]})
    return out
