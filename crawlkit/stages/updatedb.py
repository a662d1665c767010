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

from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from crawlkit import linkdb, schemas, storage
from crawlkit.conf import Conf
from crawlkit.crawldb import new_entries
from crawlkit.stages.generate import locked_by, locked_by_sql
from crawlkit.stages.transition import FETCHED, outcomes, transition, with_outcomes
from crawlkit.status import ANSWERED, FetchStatus, Status

# Outcomes after which a page's links are known afresh (its old links are replaced): a
# parse, a redirect, or a final answer that leaves the page without links (gone, denied by
# robots.txt or the address guard, no longer HTML). Transient ones (retry, skipped) and
# not_modified (the page, links included, is as it was) keep them.
LINKS_REFRESHED = [s for s in ANSWERED if s is not FetchStatus.NOT_MODIFIED]


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
    # a page's host once, not once per link: the host regex is ~0.35 us a URL (docs/scale.md)
    outlinks = (follow.select("url", host_expr("url").alias("src_host"),
                              F.posexplode(F.slice("outlinks", 1, cap)).alias("pos", "link"))
                .select(F.col("url").alias("src"), "src_host", F.col("link.url").alias("dst"), "pos",
                        F.col("link.anchor").alias("anchor"), F.col("link.meta").alias("meta"),
                        F.col("link.nofollow").alias("nofollow")))
    if not conf["db.ignore_nofollow"]:
        outlinks = outlinks.filter(~F.col("nofollow"))
    links = outlinks
    if conf["db.redirect_as_link"] and redirects:
        redirect_links = accepted_urls(content.filter(F.col("redirect_url").isNotNull()), "redirect_url", conf).select(
            F.col("url").alias("src"), host_expr("url").alias("src_host"), F.col("redirect_url").alias("dst"),
            F.lit(-1).alias("pos"),
            F.lit(None).cast("string").alias("anchor"),
            F.create_map(F.lit("kind"), F.lit("redirect")).alias("meta"),
            F.lit(False).alias("nofollow"))
        links = links.unionByName(redirect_links)
        if redirected_pages:
            first = Window.partitionBy("src", "dst").orderBy("pos")
            links = links.withColumn("_n", F.row_number().over(first)).filter("_n = 1")
    return schemas.conform(links.select(
        "src", "dst", "src_host", host_expr("dst").alias("dst_host"),
        "anchor", "meta", "nofollow",
        F.lit(now).alias("first_seen"), F.lit(now).alias("last_seen")), "links")


def refreshed_sources(content: DataFrame) -> DataFrame:
    """(src) of the segment's pages whose links are known afresh (``LINKS_REFRESHED``): the
    sources whose older links the link append supersedes."""
    return content.filter(F.col("fetch_status").isin(*[s.value for s in LINKS_REFRESHED])) \
        .select(F.col("url").alias("src"))


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
    """Host of a normalized URL (already lower-case, no userinfo/port quirks to undo), as
    ``crawlkit.urls.host_of`` gives it: an IPv6 literal without its brackets."""
    authority = r"^[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^@/?#]*@)?"
    url = F.col(column)
    ipv6 = F.regexp_extract(url, authority + r"\[([0-9a-fA-F:.]+)\]", 1)
    name = F.regexp_extract(url, authority + r"([^:/?#\[]+)", 1)
    return F.lower(F.when(ipv6 != "", ipv6).otherwise(name))


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


def link_targets(links: DataFrame, sources: DataFrame, segment_urls: DataFrame,
                 rows: int | None = None, bound: int = 0) -> DataFrame:
    """(url, depth) of the links' targets that are not URLs of the segment: depth = the
    smallest depth of a source + 1 (``sources``: url, depth; a source not there counts 0).
    ``rows``, a bound on ``sources`` and ``segment_urls`` (the segment's URLs), broadcasts
    both up to ``bound`` rows, so the links are shuffled once (by target) and not to meet them."""
    if rows is not None:
        sources, segment_urls = small(sources, rows, bound), small(segment_urls, rows, bound)
    depth = links.join(sources.select(F.col("url").alias("src"), "depth"), on="src", how="left") \
        .groupBy("dst").agg((F.min(F.coalesce("depth", F.lit(0))) + 1).alias("depth"))
    return depth.join(segment_urls.select(F.col("url").alias("dst")), on="dst", how="left_anti") \
        .select(F.col("dst").alias("url"), "depth")


def _probe(crawldb: DataFrame, keys: DataFrame, rows: int | None, bound: int, on: str = "url") -> DataFrame:
    """The crawldb rows of a few keys (``on``): a semi-join, ``keys`` broadcast up to ``bound``
    rows, so the crawldb is scanned (only the columns ``crawldb`` selects) and never shuffled."""
    if rows is not None:
        keys = small(keys, rows, bound)
    return crawldb.join(keys, on=on, how="left_semi")


def _unknown(targets: DataFrame, crawldb: DataFrame, rows: int | None, bound: int) -> DataFrame:
    """``targets`` whose URL is not in the crawldb: the crawldb's ``url_hash`` column
    semi-joined with the targets' fingerprints, then the targets without the known ones.

    The probe is the one read of the whole crawldb in updatedb, so it reads 8 bytes a row
    rather than the URLs (at 10^7 rows: 0.7-0.9 s against 2.2-2.5 s, docs/scale.md). A
    target whose 64-bit fingerprint equals a known URL's counts as known: the chance that a
    round drops a new URL that way is about targets x rows / 2^64 (3x10^-7 for 5x10^5 links
    against 10^7 URLs), the trade Mercator's and Heritrix's URL-seen tests make. The known
    fingerprints are at most ``rows`` (a bound on the targets), so they are broadcast as the
    targets are, and neither side of the second join is shuffled."""
    hashed = targets.withColumn("url_hash", F.expr(schemas.derived("crawldb")["url_hash"]))
    known = _probe(crawldb.select("url_hash"), hashed.select("url_hash"), rows, bound, on="url_hash")
    if rows is not None:
        known = small(known, rows, bound)
    return hashed.join(known, on="url_hash", how="left_anti").drop("url_hash")


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


def small(df: DataFrame, rows: int, max_rows: int) -> DataFrame:
    """``df`` with a broadcast hint when it has at most ``max_rows`` rows. A checkpointed
    DataFrame carries no size statistics, so without the hint Spark plans a sort-merge join
    and shuffles the whole big side (the link table, the crawldb) to meet a few rows."""
    return F.broadcast(df) if rows <= max_rows else df


def replaced_rows(rows: DataFrame, outcome: DataFrame, n: int, bound: int, conf: Conf,
                  now: datetime, counted: Observation | None = None) -> DataFrame:
    """The new version of crawldb ``rows`` of the segment's URLs (``n``: a bound on both), in
    one pass over them (a left join with the outcomes, broadcast): ``transition`` where the
    segment has an outcome for the URL, the row unchanged (a locked row, still locked)
    where it has none. ``counted``, if given, observes the transitioned rows by their new
    status (``by_status``)."""
    new = transition(with_outcomes(rows, small(outcome, n, bound), "left"), conf, now)
    if counted is not None:
        new = new.observe(counted, *by_status_aggregates(F.col(FETCHED)))
    return schemas.conform(new, "crawldb")


def by_status_aggregates(counts: Column) -> list[Column]:
    """One aggregate per crawldb status: the rows where ``counts`` holds that have it."""
    return [F.count(F.when(counts & (F.col("status") == s.value), 1)).alias(s.value) for s in Status]


def by_status(counted: Observation) -> dict[str, int]:
    """The statuses ``by_status_aggregates`` observed, those that occurred."""
    return {status: n for status, n in counted.get.items() if n}


def replace_locked_rows(locked: DataFrame, outcome: DataFrame, fresh: DataFrame, segment: str, rows: int,
                        db_path: str, conf: Conf, now: datetime) -> tuple[int, dict[str, int]]:
    """Apply the segment while generate's lock holds all its URLs' rows: one overwrite of the
    rows ``generated_segment = segment`` by their new version plus the new URLs (Delta's
    ``replaceWhere``: one commit that removes the lock's files and adds the written ones).
    Nothing is joined with the crawldb's other rows, so this costs about an append of the
    segment's rows; a MERGE would join the source with the target in an outer join and
    shuffle both. ``fresh`` holds only URLs the crawldb lacks (``_unknown``), so the new
    version holds each URL once. The counters are taken as the rows are written
    (``Observation``s), so nothing is computed twice: returns (new URLs, URLs by status)."""
    spark = locked.sparkSession
    statuses, new = Observation(f"by_status:{segment}"), Observation(f"new_urls:{segment}")
    written = (replaced_rows(locked, outcome, rows, conf["db.broadcast_rows"], conf, now, statuses)
               .unionByName(fresh.observe(new, F.count(F.lit(1)).alias("n"))))
    # the written rows are no longer locked, so Delta's check that they match the predicate
    # must be off for this write
    with storage.session_setting(spark, "spark.databricks.delta.replaceWhere.constraintCheck.enabled", "false"):
        written.write.format("delta").mode("overwrite").option("replaceWhere", locked_by_sql(segment)).save(db_path)
    return new.get["n"], by_status(statuses)


def merge_segment(table, rows: DataFrame, outcome: DataFrame, fresh: DataFrame, n: int, conf: Conf,
                  now: datetime) -> tuple[int, dict[str, int]]:
    """Apply the segment by a MERGE on URL, when some of its rows are no longer under its
    lock (expired and taken by a later segment, or a URL no longer in the crawldb): the
    crawldb ``rows`` of the segment's URLs (at most ``n``) are transitioned, and the MERGE
    writes them back and inserts the new URLs (an upsert of the source). Returns (new URLs
    inserted, URLs by status)."""
    spark = outcome.sparkSession
    bound = conf["db.broadcast_rows"]
    statuses = Observation("by_status:merge")
    source = replaced_rows(rows, outcome, n, bound, conf, now, statuses).unionByName(fresh) \
        .localCheckpoint(eager=True)
    with storage.merge_source_materialized(spark):
        merged = (table.alias("db").merge(small(source, source.count(), bound).alias("s"),
                                          F.col("db.url") == F.col("s.url"))
                  .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute().first())
    return merged["num_inserted_rows"], by_status(statuses)


def superseded_urls(rows: DataFrame, content: DataFrame, segment: str) -> DataFrame:
    """The segment's URLs whose crawldb ``rows`` a later fetch owns: locked by another segment
    (its lock expired and a later generate took the URL), or applied from a fetch newer than
    this segment's. Their outcomes and links are older than what the crawl holds, so they are
    not applied: an expired segment applied late (``crawlkit updatedb --segment``) must not
    put its old status, signature and links over a newer fetch's, as Nutch's updatedb keeps
    the newest fetch of a URL."""
    fetched = content.select("url", F.col("fetched_at").alias("_ours"))
    other_lock = F.col("generated_segment").isNotNull() & ~locked_by(segment)
    newer = F.col("generated_segment").isNull() & (F.col("fetched_at") > F.col("_ours"))
    return rows.join(fetched, on="url").filter(other_lock | newer).select("url")


def run_updatedb(spark: SparkSession, conf: Conf, now: datetime, segment: str) -> dict:
    """Apply ``segment``: the link append, then the crawldb commit that marks it applied,
    then a compaction of the link table when it is due (``db.links_compact_ratio``).

    The segment's links are appended straight from its parse (counted as they are written),
    and the link targets are computed from the parse again: a plan over 10^5 pages' outlinks
    is cheaper to run twice than 5x10^5 links to materialize and count (docs/scale.md).
    The rows generate locked into the segment are read once (``locked_by``: Delta's data
    skipping opens only the files generate wrote them to) and held as a local checkpoint,
    and so are the link targets with their depth: the probe of the crawldb's ``url_hash``
    column for targets that are new and the join with what it finds both read them (as a
    plan, the outlinks were exploded and shuffled for each: docs/scale.md, 2026-12-05).
    While the lock holds all the segment's rows (the usual case), one overwrite of those
    rows (``replace_locked_rows``) computes the rest inside its write: the transition of
    each row, the probe, the new URLs' rows; the counters are observed on the written
    rows. So the crawldb is read twice, the lock's files and one 8-byte column
    of the rest, and nothing is joined with the rest. Otherwise (a lock expired and taken by
    a later segment, a URL no longer there) the segment URLs' rows are read from the whole
    crawldb, the URLs a later fetch owns are left out (``superseded_urls``: neither their
    rows nor their links are applied) and a MERGE applies the rest (``merge_segment``). The
    segment's side of every join with the crawldb is broadcast up to ``db.broadcast_rows``
    rows, so the crawldb is scanned rather than shuffled.
    """
    crawl_dir = conf["crawl.dir"]
    db_path, link_path = storage.crawldb_path(crawl_dir), storage.linkdb_path(crawl_dir)
    tag, generated = f"updatedb:{segment}", storage.generated_tag(segment)
    commits = storage.history_since(spark, db_path, tag, generated)
    if storage.applied_in(commits, tag):
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
    urls = content.select("url")
    locked = crawldb.filter(locked_by(segment)).localCheckpoint(eager=True)
    all_locked = locked.join(small(urls, segment_urls, bound), on="url", how="left_semi").count() == segment_urls
    superseded = 0
    if all_locked:
        rows = locked
    else:
        rows = _probe(crawldb, urls, segment_urls, bound).localCheckpoint(eager=True)
        stale = superseded_urls(rows, content, segment).localCheckpoint(eager=True)
        if superseded := stale.count():   # a later fetch of theirs came first: not applied
            content, parsed, rows = (df.join(stale, on="url", how="left_anti")
                                     for df in (content, parsed, rows))
            urls = content.select("url")
    links = segment_links(content, parsed, conf, now, redirects=sizes["redirects"] > 0,
                          redirected_pages=sizes["redirected"] > 0)
    link_changes = linkdb.append_segment(spark, link_path, links, refreshed_sources(content), now,
                                         f"linkdb:{segment}",
                                         locked_at=storage.committed_at(commits, generated))
    links_count = link_changes["appended"] if "skipped" not in link_changes else links.count()

    outcome = outcomes(content, parsed)
    targets = link_targets(links, rows, urls, segment_urls, bound).localCheckpoint(eager=True)
    fresh = _entries(_unknown(targets, crawldb, links_count, bound), crawldb, conf, now)
    with storage.commit_tag(spark, tag):
        if all_locked:
            new_count, counts = replace_locked_rows(rows, outcome, fresh, segment, segment_urls, db_path, conf, now)
        else:
            new_count, counts = merge_segment(table, rows, outcome, fresh, segment_urls, conf, now)
    counters = {"segment": segment, "by_status": counts, "links": links_count, "link_changes": link_changes,
                "new_urls": new_count, "superseded": superseded,
                "version": storage.table_version(spark, db_path)}
    if linkdb.compaction_due(link_changes["since_compaction"], conf["db.links_compact_ratio"]):
        counters["link_compaction"] = linkdb.compact(spark, link_path, f"{linkdb.COMPACT_TAG}:{segment}")
    storage.write_stats(spark, crawl_dir, segment, "updatedb", counters)
    return counters
