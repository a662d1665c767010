"""updatedb: apply a fetched and parsed segment to the crawldb and the link table.

For every URL of the segment the fetch outcome picks the new status through the documented
transition table (crawlkit.status), and the schedule picks the next fetch time. Outlinks of
fetched pages (and redirect targets) that are not yet known become unfetched rows. The link
table changes first (an append of the segment's links as their pages' new version, tagged
``linkdb:<segment>``: crawlkit.linkdb), then the crawldb in one commit tagged
``updatedb:<segment>``, which marks the segment applied: while generate's lock holds every
segment URL's row (the usual case), an overwrite of the locked rows by their new version and
the new URLs (``replace_locked_rows``); else a MERGE on URL (``merge_segment``). A rerun
after a crash (or by mistake) appends no link twice and skips an applied crawldb commit.
With deletion vectors on, the rows a commit replaces are marked rather than their files
rewritten, so a round's cost follows the segment, not the crawldb or the links.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from crawlkit import linkdb, schemas, storage
from crawlkit.conf import Conf
from crawlkit.crawldb import new_entries
from crawlkit.schedule import next_interval
from crawlkit.stages.generate import locked_by, locked_by_sql
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


def transitioned_columns(db, o, conf: Conf, now: datetime) -> dict[str, Column]:
    """The columns updatedb changes in a segment URL's crawldb row, from that row (``db(name)``)
    and the URL's outcome (``o(name)``). One definition serves the select of
    ``updated_entries`` (which the overwrite of the locked rows uses) and the SET of the
    MERGE used when some lock no longer holds, whose source carries the outcome and whose
    target is the row itself."""
    fs = o("fetch_status")
    same_signature = (fs == FetchStatus.SUCCESS.value) & o("signature").isNotNull() & \
        (o("signature") == db("signature"))
    outcome_col = F.when(same_signature, F.lit(FetchStatus.NOT_MODIFIED.value)).otherwise(fs)
    mapped = _lookup(outcome_col, lambda r: r[0].value if r[0] else None)
    schedule = _lookup(outcome_col, lambda r: r[1])
    resets = _lookup(outcome_col, lambda r: r[2])
    failure = outcome_col.isin(*[s.value for s in COUNTS_AS_FAILURE])
    retries = F.when(resets, F.lit(0)).otherwise(db("retries") + F.when(failure, 1).otherwise(0))
    status = F.coalesce(mapped, db("status"))
    status = F.when((status == Status.RETRY.value) & (retries > conf["db.retry_max"]),
                    F.lit(Status.GONE.value)).otherwise(status)
    schedule = F.when(status == Status.GONE.value, F.lit(Schedule.GONE.value)).otherwise(schedule)

    compared = db("signature").isNotNull() & outcome_col.isin(
        FetchStatus.SUCCESS.value, FetchStatus.NOT_MODIFIED.value)
    changed = compared & (outcome_col == FetchStatus.SUCCESS.value)
    unchanged = outcome_col == FetchStatus.NOT_MODIFIED.value
    change_count = db("change_count") + F.when(changed, 1).otherwise(0)
    check_count = db("check_count") + F.when(compared, 1).otherwise(0)
    interval = next_interval(db("fetch_interval"), changed, unchanged, change_count, check_count, conf)
    # (least() skips nulls, so the cap applies only to a Retry-After that was sent)
    retry_wait = F.when(o("retry_after").isNotNull(),
                        F.least(o("retry_after"), F.lit(int(conf["fetcher.max_retry_after"])))
                        ).otherwise(F.lit(conf["db.retry_interval"]))
    wait = (F.when(schedule == Schedule.RETRY.value, retry_wait)
            .when(schedule == Schedule.GONE.value, F.lit(conf["db.gone_recheck_interval"]))
            .otherwise(interval))
    success = outcome_col == FetchStatus.SUCCESS.value
    got_body = fs == FetchStatus.SUCCESS.value
    keep_or = lambda new, old: F.when(got_body, new).otherwise(old)  # noqa: E731
    error = F.coalesce(o("error"), o("parse_error"))
    no_entry = F.create_map().cast("map<string,string>")
    metadata = F.map_filter(db("metadata"), lambda k, v: ~k.isin("last_error", "redirect_to"))
    metadata = F.map_concat(metadata, F.when(error.isNotNull(), F.create_map(F.lit("last_error"), error))
                            .otherwise(no_entry))
    metadata = F.map_concat(metadata, F.when(o("redirect_url").isNotNull(),
                                             F.create_map(F.lit("redirect_to"), o("redirect_url")))
                            .otherwise(no_entry))
    return {
        "status": status,
        "fetch_time": F.lit(now) + F.make_dt_interval(secs=wait.cast("double")),
        "fetched_at": o("fetched_at"),
        "retries": retries,
        "fetch_interval": F.when(schedule == Schedule.NORMAL.value, interval).otherwise(db("fetch_interval")),
        "signature": keep_or(o("signature"), db("signature")),
        "modified_time": F.when(changed | (success & db("signature").isNull()), F.lit(now))
                          .otherwise(db("modified_time")),
        "etag": keep_or(o("headers").getItem("etag"), db("etag")),
        "last_modified": keep_or(o("headers").getItem("last-modified"), db("last_modified")),
        "http_status": F.coalesce(o("http_status"), db("http_status")),
        "change_count": change_count,
        "check_count": check_count,
        "generated_segment": F.lit(None).cast("string"),
        "generate_time": F.lit(None).cast("timestamp"),
        "metadata": metadata,
        "schema_version": F.lit(schemas.version("crawldb")),
    }


def _prefixed(prefix: str):
    return lambda name: F.col(f"{prefix}{name}")


def updated_entries(crawldb: DataFrame, outcome: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """New crawldb rows for the URLs of the segment (status, retries, schedule, signature):
    the crawldb joined with the outcomes, ``transitioned_columns`` and the rest kept."""
    joined = crawldb.alias("db").join(outcome.alias("o"), on=F.col("db.url") == F.col("o.url"), how="inner")
    changed = transitioned_columns(_prefixed("db."), _prefixed("o."), conf, now)
    return joined.select([changed[name].alias(name) if name in changed else F.col(f"db.{name}")
                          for name in schemas.columns("crawldb")])


def redirected_page() -> Column:
    """A content row fetched through redirects followed inline: parsed, and with a redirect
    link too."""
    return (F.col("fetch_status") == FetchStatus.SUCCESS.value) & F.col("redirect_url").isNotNull()


def segment_links(content: DataFrame, parsed: DataFrame, conf: Conf, now: datetime, *,
                  redirects: bool = True, redirected_pages: bool = True) -> DataFrame:
    """Links found in the segment: followable outlinks of parsed pages plus redirects.

    parse keeps a page's outlinks unique and content has one row per URL, so the one
    (src, dst) that can repeat is a page's redirect link met by the same page's outlink to
    that URL: only on a page reached through redirects followed inline (``redirected_page``).
    Without such pages (``redirected_pages`` false: every segment under the default
    ``fetcher.follow_redirects = 0``) the links are a projection with no shuffle; with them a
    window on (src, dst) keeps the redirect link. (parse drops that outlink as a self-link
    unless ``parser.ignore_same_page_links`` is off, but segments parsed before it did so
    may hold one.) ``redirects`` false says no content row has a ``redirect_url`` (the caller
    counted them): the redirect links, and their URL filter's Python pass, are skipped."""
    follow = parsed if conf["db.ignore_nofollow"] else parsed.filter(~F.col("nofollow"))
    cap = conf["db.max_outlinks_per_page"]
    outlinks = (follow.select("url", F.posexplode(F.slice("outlinks", 1, cap)).alias("pos", "link"))
                .select(F.col("url").alias("src"), F.col("link.url").alias("dst"), "pos",
                        F.col("link.anchor").alias("anchor"), F.col("link.meta").alias("meta"),
                        F.col("link.nofollow").alias("nofollow")))
    if not conf["db.ignore_nofollow"]:
        outlinks = outlinks.filter(~F.col("nofollow"))
    links = outlinks
    if conf["db.redirect_as_link"] and redirects:
        redirect_links = accepted_urls(content.filter(F.col("redirect_url").isNotNull()), "redirect_url", conf).select(
            F.col("url").alias("src"), F.col("redirect_url").alias("dst"), F.lit(-1).alias("pos"),
            F.lit(None).cast("string").alias("anchor"),
            F.create_map(F.lit("kind"), F.lit("redirect")).alias("meta"),
            F.lit(False).alias("nofollow"))
        links = links.unionByName(redirect_links)
        if redirected_pages:
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
    """Add the registrable domain of each row's host by crawlkit.urls.domain_of (the public
    suffix list is Python-only), memoized per host in each task: one narrow Arrow pass. A
    pass over the distinct hosts and a join back shuffles both (docs/scale.md, 2026-12-04)."""
    schema = StructType(df.schema.fields + [StructField("domain", StringType())])

    def domains(batches):
        import pyarrow as pa
        from crawlkit.urls import domain_of
        memo: dict[str | None, str | None] = {}
        for batch in batches:
            hosts = batch.column(batch.schema.get_field_index("host")).to_pylist()
            for host in set(hosts).difference(memo):
                memo[host] = domain_of(host) if host else None
            yield batch.append_column("domain", pa.array([memo[h] for h in hosts], pa.string()))
    return df.mapInArrow(domains, schema)


def link_targets(links: DataFrame, sources: DataFrame, segment_urls: DataFrame) -> DataFrame:
    """(url, depth) of the links' targets that are not URLs of the segment: depth = the
    smallest depth of a source + 1 (``sources``: url, depth; a source not there counts 0)."""
    depth = links.join(sources.select(F.col("url").alias("src"), "depth"), on="src", how="left") \
        .groupBy("dst").agg((F.min(F.coalesce("depth", F.lit(0))) + 1).alias("depth"))
    return depth.join(segment_urls.select(F.col("url").alias("dst")), on="dst", how="left_anti") \
        .select(F.col("dst").alias("url"), "depth")


def _probe(crawldb: DataFrame, urls: DataFrame, rows: int | None, bound: int) -> DataFrame:
    """The crawldb rows of a few URLs: a semi-join, ``urls`` broadcast up to ``bound`` rows,
    so the crawldb is scanned (only the columns ``crawldb`` selects) and never shuffled."""
    if rows is not None:
        urls = small(urls, rows, bound)
    return crawldb.join(urls, on="url", how="left_semi")


def _unknown(targets: DataFrame, crawldb: DataFrame, rows: int | None, bound: int) -> DataFrame:
    """``targets`` whose URL is not in the crawldb: the crawldb's URL column semi-joined with
    the targets, then the targets without the known ones. The known URLs are at most
    ``rows`` (a bound on the targets), so they are broadcast as the targets are, and
    neither side of the second join is shuffled."""
    known = _probe(crawldb.select("url"), targets.select("url"), rows, bound)
    if rows is not None:
        known = small(known, rows, bound)
    return targets.join(known, on="url", how="left_anti")


def _entries(targets: DataFrame, crawldb: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """Crawldb rows for new ``targets`` (url, depth), within ``db.max_urls_per_host``."""
    fresh = targets.withColumn("host", host_expr("url"))
    cap = conf["db.max_urls_per_host"]
    if cap > 0:
        known = crawldb.groupBy("host").agg(F.count("*").alias("_known"))
        rank = Window.partitionBy("host").orderBy("depth", "url")
        fresh = (fresh.join(known, on="host", how="left")
                 .withColumn("_n", F.row_number().over(rank))
                 .filter(F.coalesce("_known", F.lit(0)) + F.col("_n") <= cap))
    return new_entries(with_domain(fresh), conf, now)


def new_urls(links: DataFrame, crawldb: DataFrame, conf: Conf, now: datetime,
             links_count: int | None = None) -> DataFrame:
    """Crawldb rows for link targets not yet in the crawldb (depth = source depth + 1),
    apart from the commit that adds them (the scale benchmark writes these rows as its baseline)."""
    bound = conf["db.broadcast_rows"]
    srcs = links.select(F.col("src").alias("url")).distinct()
    sources = _probe(crawldb.select("url", "depth"), srcs, links_count, bound)
    targets = _unknown(link_targets(links, sources, srcs), crawldb, links_count, bound)
    return _entries(targets, crawldb, conf, now)


def segment_state(crawldb: DataFrame, segment_urls: DataFrame, rows: int, bound: int) -> DataFrame:
    """What updatedb reads of the crawldb before its commit: for the segment's URLs only, the
    columns their new status follows from (for the counters) and their depth (for their
    links' targets). Parquet reads these five columns of the crawldb, not the whole rows."""
    state = crawldb.select("url", "depth", "status", "signature", "retries")
    return _probe(state, segment_urls, rows, bound)


def status_counts(state: DataFrame, outcome: DataFrame, conf: Conf, now: datetime) -> dict[str, int]:
    """URLs of the segment by the status updatedb gives them (by ``transitioned_columns``)."""
    status = transitioned_columns(_prefixed("db."), _prefixed("o."), conf, now)["status"]
    joined = state.alias("db").join(outcome.alias("o"), on=F.col("db.url") == F.col("o.url"))
    tally = joined.groupBy(status.alias("status")).agg(F.count("*").alias("n")).collect()
    return {r["status"]: r["n"] for r in tally}


# The outcome columns ``transitioned_columns`` reads, carried in the MERGE source as o_<name>.
OUTCOME_COLUMNS = ["fetch_status", "signature", "parse_error", "error", "retry_after", "fetched_at",
                   "headers", "redirect_url", "http_status"]


def merge_source(outcome: DataFrame, fresh: DataFrame) -> DataFrame:
    """One row per segment URL (its outcome, ``_new`` false) and per new URL (a
    complete crawldb row, ``_new`` true); the two sets of URLs are disjoint."""
    seg = outcome.select("url", *[F.col(c).alias(f"o_{c}") for c in OUTCOME_COLUMNS])
    return (seg.withColumn("_new", F.lit(False))
            .unionByName(fresh.withColumn("_new", F.lit(True)), allowMissingColumns=True))


def small(df: DataFrame, rows: int, max_rows: int) -> DataFrame:
    """``df`` with a broadcast hint when it has at most ``max_rows`` rows. A checkpointed
    DataFrame carries no size statistics, so without the hint Spark plans a sort-merge join
    and shuffles the whole big side (the link table, the crawldb) to meet a few rows."""
    return F.broadcast(df) if rows <= max_rows else df


def replaced_rows(locked: DataFrame, outcome: DataFrame, rows: int, bound: int, conf: Conf,
                  now: datetime) -> DataFrame:
    """The new version of the rows locked into a segment: transitioned where the segment has
    an outcome for the URL, unchanged (still locked) where it has none."""
    outcome = small(outcome, rows, bound)
    kept = locked.join(outcome.select("url"), on="url", how="left_anti")
    return schemas.conform(updated_entries(locked, outcome, conf, now), "crawldb").unionByName(kept)


def replace_locked_rows(crawldb: DataFrame, outcome: DataFrame, fresh: DataFrame, segment: str, rows: int,
                        db_path: str, conf: Conf, now: datetime) -> int:
    """Apply the segment while generate's lock holds all its URLs' rows: one overwrite of the
    rows ``generated_segment = segment`` by their new version plus the new URLs (Delta's
    ``replaceWhere``: one commit that removes the lock's files and adds the written ones).
    Nothing is joined with the crawldb's other rows, so this costs about an append of the
    segment's rows; a MERGE would join the source with the target in an outer join and
    shuffle both. ``fresh`` holds only URLs the crawldb lacks (``_unknown``), so the new
    version holds each URL once. Returns the number of new URLs."""
    locked = crawldb.filter(locked_by(segment))
    written = replaced_rows(locked, outcome, rows, conf["db.broadcast_rows"], conf, now).unionByName(fresh)
    # the written rows are no longer locked, so Delta's check that they match the predicate
    # must be off for this write
    with storage.session_setting(locked.sparkSession, "spark.databricks.delta.replaceWhere.constraintCheck.enabled",
                                 "false"):
        written.write.format("delta").mode("overwrite").option("replaceWhere", locked_by_sql(segment)).save(db_path)
    return fresh.count()


def merge_segment(table, outcome: DataFrame, fresh: DataFrame, conf: Conf, now: datetime) -> int:
    """Apply the segment by a MERGE on URL, when some of its rows are no longer under its
    lock (expired and taken by a later segment): each segment URL's row gets
    ``transitioned_columns``, the new URLs are inserted. Returns the number inserted."""
    spark = outcome.sparkSession
    source = merge_source(outcome, fresh).localCheckpoint(eager=True)
    rows = source.count()
    with storage.merge_source_materialized(spark):
        merged = (table.alias("db").merge(small(source, rows, conf["db.broadcast_rows"]).alias("s"),
                                          F.col("db.url") == F.col("s.url"))
                  .whenMatchedUpdate(condition="NOT s._new",
                                     set=transitioned_columns(_prefixed("db."), _prefixed("s.o_"), conf, now))
                  .whenNotMatchedInsert(condition="s._new",
                                        values={c: F.col(f"s.{c}") for c in schemas.columns("crawldb")})
                  .execute().first())
    return merged["num_inserted_rows"]


def run_updatedb(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Apply ``segment``: the link append, then the crawldb commit that marks it applied,
    then a compaction of the link table when it is due (``db.links_compact_ratio``).

    Before the commit, two narrow scans of the crawldb: five columns of the segment URLs'
    rows (their depth, for their links' targets, and what their new status follows from,
    for the counters), and the URL column against the links' targets, so that only targets
    that are new become rows. While generate's lock holds all the segment's rows, the first
    scan and the commit read only the files holding them (``locked_by``), and the commit is
    an overwrite of those rows (``replace_locked_rows``): no join with the rest of the
    crawldb. The target probe reads the URL column of the whole crawldb, as finding out that
    a URL is new must. Otherwise (a lock expired and taken by a later segment, a URL no
    longer there) the state is read from the whole crawldb and a MERGE applies the segment
    (``merge_segment``). The new rows are checkpointed (``localCheckpoint``) so that neither
    path computes them twice; the segment's side of every join with the crawldb is
    broadcast up to ``db.broadcast_rows`` rows, so the crawldb is scanned rather than
    shuffled.
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

    redirected = F.count(F.when(redirected_page(), 1)).alias("redirected")
    sizes = content.agg(F.count(F.lit(1)).alias("urls"), F.count("redirect_url").alias("redirects"),
                        redirected).first()
    bound, segment_urls = conf["db.broadcast_rows"], sizes["urls"]
    links = segment_links(content, parsed, conf, now, redirects=sizes["redirects"] > 0,
                          redirected_pages=sizes["redirected"] > 0).localCheckpoint(eager=True)
    links_count = links.count()
    refreshed = content.filter(F.col("fetch_status").isin(*[s.value for s in LINKS_REFRESHED])) \
        .select(F.col("url").alias("src"))
    link_changes = linkdb.append_segment(spark, link_path, links, links_count, refreshed, now, f"linkdb:{segment}")

    outcome = outcomes(content, parsed)
    # The segment's rows, read from its own files when generate's lock still holds every one
    # of them (the usual case); else (a lock expired and taken by a later segment, a URL no
    # longer there) from the whole crawldb, as the MERGE (merge_segment) then must.
    urls = content.select("url")
    state = segment_state(crawldb.filter(locked_by(segment)), urls, segment_urls,
                          bound).localCheckpoint(eager=True)
    all_locked = state.count() == segment_urls
    if not all_locked:
        state = segment_state(crawldb, urls, segment_urls, bound).localCheckpoint(eager=True)
    counts = status_counts(state, outcome, conf, now)
    # the targets feed the probe, the join with what it finds and the new rows: computed once
    targets = link_targets(links, state, urls).localCheckpoint(eager=True)
    targets = _unknown(targets, crawldb, targets.count(), bound)
    fresh = _entries(targets, crawldb, conf, now).localCheckpoint(eager=True)
    with storage.commit_tag(spark, tag):
        if all_locked:
            new_count = replace_locked_rows(crawldb, outcome, fresh, segment, segment_urls, db_path, conf, now)
        else:
            new_count = merge_segment(table, outcome, fresh, conf, now)
    counters = {"segment": segment, "by_status": counts, "links": links_count, "link_changes": link_changes,
                "new_urls": new_count,
                "version": storage.table_version(spark, db_path)}
    if linkdb.due_for_compaction(spark, link_path, conf["db.links_compact_ratio"]):
        counters["link_compaction"] = linkdb.compact(spark, link_path, f"{linkdb.COMPACT_TAG}:{segment}")
    storage.write_stats(spark, crawl_dir, segment, "updatedb", counters)
    return counters
