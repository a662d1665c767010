"""updatedb: apply a fetched and parsed segment to the crawldb and the link table.

For every URL of the segment the fetch outcome picks the new status through the documented
transition table (crawlkit.status), and the schedule picks the next fetch time. Outlinks of
fetched pages (and redirect targets) that are not yet known become unfetched rows. The link
table changes first (an append of the segment's links as their pages' new version, tagged
``linkdb:<segment>``: crawlkit.linkdb), then the crawldb in one MERGE tagged
``updatedb:<segment>``, whose commit marks the segment applied. A rerun after a crash (or by
mistake) appends no link twice and skips an applied crawldb MERGE. New URLs go in the
crawldb MERGE as inserts; with deletion vectors on, updated rows are marked rather than
their files rewritten, so a round's cost follows the segment, not the crawldb or the links.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from crawlkit import linkdb, schemas, storage
from crawlkit.conf import Conf
from crawlkit.crawldb import new_entries
from crawlkit.schedule import next_interval
from crawlkit.status import COUNTS_AS_FAILURE, TRANSITIONS, FetchStatus, Schedule, Status

# Outcomes after which a page's links are known afresh (its old links are replaced).
LINKS_REFRESHED = [FetchStatus.SUCCESS, FetchStatus.NOT_FOUND, FetchStatus.GONE,
                   FetchStatus.ACCESS_DENIED, FetchStatus.REDIRECT_PERM, FetchStatus.REDIRECT_TEMP]


def _lookup(outcome: Column, pick) -> Column:
    """A CASE expression over the transition table."""
    expr = None
    for fetch_status, row in TRANSITIONS.items():
        value = pick(row)
        value = F.lit(value.value if hasattr(value, "value") else value)
        expr = (F.when(outcome == fetch_status.value, value) if expr is None
                else expr.when(outcome == fetch_status.value, value))
    return expr


def outcomes(content: DataFrame, parsed: DataFrame) -> DataFrame:
    """One row per segment URL: fetch outcome joined with its parse result."""
    return content.join(
        parsed.select("url", "signature", "parse_status", F.col("error").alias("parse_error")),
        on="url", how="left")


def updated_entries(crawldb: DataFrame, outcome: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """New crawldb rows for the URLs of the segment (status, retries, schedule, signature)."""
    o = outcome.alias("o")
    db = crawldb.alias("db")
    joined = db.join(o, on=F.col("db.url") == F.col("o.url"), how="inner")
    fs = F.col("o.fetch_status")
    same_signature = (fs == FetchStatus.SUCCESS.value) & F.col("o.signature").isNotNull() & \
        (F.col("o.signature") == F.col("db.signature"))
    outcome_col = F.when(same_signature, F.lit(FetchStatus.NOT_MODIFIED.value)).otherwise(fs)
    mapped = _lookup(outcome_col, lambda r: r[0].value if r[0] else None)
    schedule = _lookup(outcome_col, lambda r: r[1])
    resets = _lookup(outcome_col, lambda r: r[2])
    failure = outcome_col.isin(*[s.value for s in COUNTS_AS_FAILURE])
    retries = F.when(resets, F.lit(0)).otherwise(F.col("db.retries") + F.when(failure, 1).otherwise(0))
    status = F.coalesce(mapped, F.col("db.status"))
    status = F.when((status == Status.RETRY.value) & (retries > conf["db.retry_max"]),
                    F.lit(Status.GONE.value)).otherwise(status)
    schedule = F.when(status == Status.GONE.value, F.lit(Schedule.GONE.value)).otherwise(schedule)

    compared = F.col("db.signature").isNotNull() & outcome_col.isin(
        FetchStatus.SUCCESS.value, FetchStatus.NOT_MODIFIED.value)
    changed = compared & (outcome_col == FetchStatus.SUCCESS.value)
    unchanged = outcome_col == FetchStatus.NOT_MODIFIED.value
    change_count = F.col("db.change_count") + F.when(changed, 1).otherwise(0)
    check_count = F.col("db.check_count") + F.when(compared, 1).otherwise(0)
    interval = next_interval(F.col("db.fetch_interval"), changed, unchanged, change_count, check_count, conf)
    # (least() skips nulls, so the cap applies only to a Retry-After that was sent)
    retry_wait = F.when(F.col("o.retry_after").isNotNull(),
                        F.least(F.col("o.retry_after"), F.lit(int(conf["fetcher.max_retry_after"])))
                        ).otherwise(F.lit(conf["db.retry_interval"]))
    wait = (F.when(schedule == Schedule.RETRY.value, retry_wait)
            .when(schedule == Schedule.GONE.value, F.lit(conf["db.gone_recheck_interval"]))
            .otherwise(interval))
    success = outcome_col == FetchStatus.SUCCESS.value
    got_body = fs == FetchStatus.SUCCESS.value
    header = lambda name: F.col("o.headers").getItem(name)  # noqa: E731
    keep_or = lambda new, old: F.when(got_body, new).otherwise(old)  # noqa: E731
    error = F.coalesce(F.col("o.error"), F.col("o.parse_error"))
    metadata = F.map_filter(F.col("db.metadata"), lambda k, v: ~k.isin("last_error", "redirect_to"))
    metadata = F.map_concat(metadata, F.when(error.isNotNull(), F.create_map(F.lit("last_error"), error))
                            .otherwise(F.create_map().cast("map<string,string>")))
    metadata = F.map_concat(metadata, F.when(F.col("o.redirect_url").isNotNull(),
                                             F.create_map(F.lit("redirect_to"), F.col("o.redirect_url")))
                            .otherwise(F.create_map().cast("map<string,string>")))
    return joined.select(
        F.col("db.url").alias("url"), "db.host", "db.domain",
        status.alias("status"),
        (F.lit(now) + F.make_dt_interval(secs=wait.cast("double"))).alias("fetch_time"),
        F.col("o.fetched_at").alias("fetched_at"),
        retries.alias("retries"),
        F.when(schedule == Schedule.NORMAL.value, interval).otherwise(F.col("db.fetch_interval")).alias("fetch_interval"),
        "db.score", "db.scores", "db.opic_cash", "db.opic_history", "db.last_processed",
        keep_or(F.col("o.signature"), F.col("db.signature")).alias("signature"),
        F.when(changed | (success & F.col("db.signature").isNull()), F.lit(now))
         .otherwise(F.col("db.modified_time")).alias("modified_time"),
        keep_or(header("etag"), F.col("db.etag")).alias("etag"),
        keep_or(header("last-modified"), F.col("db.last_modified")).alias("last_modified"),
        F.coalesce(F.col("o.http_status"), F.col("db.http_status")).alias("http_status"),
        change_count.alias("change_count"), check_count.alias("check_count"),
        "db.depth", "db.hot_distance",
        F.lit(None).cast("string").alias("generated_segment"),
        F.lit(None).cast("timestamp").alias("generate_time"),
        metadata.alias("metadata"),
        F.lit(schemas.version("crawldb")).alias("schema_version"))


def segment_links(content: DataFrame, parsed: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """Links found in the segment: followable outlinks of parsed pages plus redirects."""
    follow = parsed if conf["db.ignore_nofollow"] else parsed.filter(~F.col("nofollow"))
    cap = conf["db.max_outlinks_per_page"]
    outlinks = (follow.select("url", F.posexplode(F.slice("outlinks", 1, cap)).alias("pos", "link"))
                .select(F.col("url").alias("src"), F.col("link.url").alias("dst"), "pos",
                        F.col("link.anchor").alias("anchor"), F.col("link.meta").alias("meta"),
                        F.col("link.nofollow").alias("nofollow")))
    if not conf["db.ignore_nofollow"]:
        outlinks = outlinks.filter(~F.col("nofollow"))
    links = outlinks
    if conf["db.redirect_as_link"]:
        redirects = accepted_urls(content.filter(F.col("redirect_url").isNotNull()), "redirect_url", conf).select(
            F.col("url").alias("src"), F.col("redirect_url").alias("dst"), F.lit(-1).alias("pos"),
            F.lit(None).cast("string").alias("anchor"),
            F.create_map(F.lit("kind"), F.lit("redirect")).alias("meta"),
            F.lit(False).alias("nofollow"))
        links = links.unionByName(redirects)
    first = Window.partitionBy("src", "dst").orderBy("pos")
    links = links.withColumn("_n", F.row_number().over(first)).filter("_n = 1")
    return schemas.conform(links.select(
        "src", "dst", host_expr("src").alias("src_host"), host_expr("dst").alias("dst_host"),
        "anchor", "meta", "nofollow",
        F.lit(now).alias("first_seen"), F.lit(now).alias("last_seen")), "links")


def accepted_urls(df: DataFrame, column: str, conf: Conf) -> DataFrame:
    """Rows whose URL in ``column`` passes the [urls] filter: redirect targets get the same
    spider-trap guards as outlinks (parse filters those)."""
    urls_conf = conf.section("urls")

    def keep(batches):
        import pyarrow as pa
        from crawlkit.urls import UrlFilter
        url_filter = UrlFilter(urls_conf)
        for batch in batches:
            urls = batch.column(batch.schema.get_field_index(column)).to_pylist()
            yield batch.filter(pa.array([u is not None and url_filter.check(u) is None for u in urls]))
    return df.mapInArrow(keep, df.schema)


def host_expr(column: str) -> Column:
    """Host of a normalized URL (already lower-case, no userinfo/port quirks to undo)."""
    return F.lower(F.regexp_extract(F.col(column), r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/]*@)?([^:/?#]+)", 1))


def with_domain(df: DataFrame) -> DataFrame:
    """Add the registrable domain, computed once per distinct host with crawlkit.urls.domain_of
    (the public suffix list is Python-only; hosts are few compared to URLs)."""
    def domains(batches):
        import pyarrow as pa
        from crawlkit.urls import domain_of
        for batch in batches:
            hosts = batch.column(0).to_pylist()
            yield pa.RecordBatch.from_pydict({"host": hosts, "domain": [domain_of(h) if h else None for h in hosts]})
    hosts = df.select("host").distinct().mapInArrow(domains, "host string, domain string")
    return df.join(hosts, on="host", how="left")


def new_urls(links: DataFrame, crawldb: DataFrame, conf: Conf, now: datetime,
             links_count: int | None = None) -> DataFrame:
    """Crawldb rows for link targets not yet in the crawldb (depth = source depth + 1).

    The crawldb is probed with the segment's few URLs (semi-joins against them, broadcast
    when ``links_count`` is at most ``db.broadcast_rows``) rather than joined whole, so it is
    scanned but never shuffled."""
    def probe(column: str) -> DataFrame:
        urls = links.select(F.col(column).alias("url")).distinct()
        if links_count is not None:
            urls = small(urls, links_count, conf["db.broadcast_rows"])
        return crawldb.join(urls, on="url", how="left_semi")

    src_depth = probe("src").select(F.col("url").alias("src"), "depth")
    known_dsts = probe("dst").select(F.col("url").alias("dst"))
    depth = links.join(src_depth, on="src", how="left") \
        .groupBy("dst").agg((F.min(F.coalesce("depth", F.lit(0))) + 1).alias("depth"))
    fresh = depth.join(known_dsts, on="dst", how="left_anti") \
        .select(F.col("dst").alias("url"), "depth").withColumn("host", host_expr("url"))
    cap = conf["db.max_urls_per_host"]
    if cap > 0:
        known = crawldb.groupBy("host").agg(F.count("*").alias("_known"))
        rank = Window.partitionBy("host").orderBy("depth", "url")
        fresh = (fresh.join(known, on="host", how="left")
                 .withColumn("_n", F.row_number().over(rank))
                 .filter(F.coalesce("_known", F.lit(0)) + F.col("_n") <= cap))
    return new_entries(with_domain(fresh), conf, now)


def small(df: DataFrame, rows: int, max_rows: int) -> DataFrame:
    """``df`` with a broadcast hint when it has at most ``max_rows`` rows. A checkpointed
    DataFrame carries no size statistics, so without the hint Spark plans a sort-merge join
    and shuffles the whole big side (the link table, the crawldb) to meet a few rows."""
    return F.broadcast(df) if rows <= max_rows else df


def run_updatedb(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Apply ``segment``: the link append, then the crawldb MERGE that marks it applied, then
    a compaction of the link table when it is due (``db.links_compact_ratio``).

    The MERGE's source is computed once and checkpointed (``localCheckpoint``): the joins
    that build it (three scans of the crawldb: the outcomes, the links' sources and their
    targets) run once, the counters are read from the checkpoint, and Delta need not
    materialize the source again. The segment's
    side of every join with the crawldb is broadcast up to ``db.broadcast_rows`` rows, so the
    crawldb is scanned rather than shuffled; the one exception is the insert pass of the
    MERGE, an outer join that keeps the source, which Spark will not broadcast.
    """
    crawl_dir = conf["crawl.dir"]
    db_path, link_path = storage.crawldb_path(crawl_dir), storage.linkdb_path(crawl_dir)
    tag = f"updatedb:{segment}"
    if storage.was_applied(spark, db_path, tag):
        return {"segment": segment, "skipped": "already applied"}
    from crawlkit.resume import SegmentStateError, is_abandoned
    if is_abandoned(spark, crawl_dir, segment):
        raise SegmentStateError(f"segment {segment} was abandoned (--abandon-segment): "
                                "its locks are released and it is not applied")
    content = storage.read_segment_part(spark, crawl_dir, segment, "content", "content")
    parsed = storage.read_segment_part(spark, crawl_dir, segment, "parse", "parse")
    table = storage.ensure_table(spark, db_path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    crawldb = table.toDF()

    bound, segment_urls = conf["db.broadcast_rows"], content.count()
    links = segment_links(content, parsed, conf, now).localCheckpoint(eager=True)
    links_count = links.count()
    refreshed = content.filter(F.col("fetch_status").isin(*[s.value for s in LINKS_REFRESHED])) \
        .select(F.col("url").alias("src"))
    link_changes = linkdb.append_segment(spark, link_path, links, links_count, refreshed, now, f"linkdb:{segment}")

    outcome = small(outcomes(content, parsed), segment_urls, bound)
    updates = schemas.conform(updated_entries(crawldb, outcome, conf, now), "crawldb")
    fresh = new_urls(links, crawldb, conf, now, links_count)
    source = (updates.withColumn("_new", F.lit(False))
              .unionByName(fresh.withColumn("_new", F.lit(True)))
              .localCheckpoint(eager=True))
    tally = source.groupBy("_new", "status").agg(F.count("*").alias("n")).collect()
    counts = {r["status"]: r["n"] for r in tally if not r["_new"]}
    rows = sum(r["n"] for r in tally)
    with storage.commit_tag(spark, tag), storage.merge_source_materialized(spark):
        (table.alias("db").merge(small(source.drop("_new"), rows, bound).alias("s"), "db.url = s.url")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    counters = {"segment": segment, "by_status": counts, "links": links_count, "link_changes": link_changes,
                "new_urls": sum(r["n"] for r in tally if r["_new"]),
                "version": storage.table_version(spark, db_path)}
    if linkdb.due_for_compaction(spark, link_path, conf["db.links_compact_ratio"]):
        counters["link_compaction"] = linkdb.compact(spark, link_path, f"{linkdb.COMPACT_TAG}:{segment}")
    storage.write_stats(spark, crawl_dir, segment, "updatedb", counters)
    return counters
