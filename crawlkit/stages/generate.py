"""generate: the round's fetch list, the most important due URLs first.

Candidates are URLs due now (``fetch_time <= now``), not locked by a segment that was never
applied (the lock expires after ``generate.lock_timeout``, as Nutch's crawl.gen.delay), with
an ordering score of at least ``generate.min_score``. Per-host and per-domain caps keep the
best URLs of each host; then an exact global top-N by score (Spark's TakeOrderedAndProject,
not Nutch's approximate per-reducer cut; the caps' window runs over the best candidates
only, crawlkit/stages/capped_top.py), or by several metrics in turn
(``generate.policy = "interleave"``, the default: crawlkit/stages/interleave.py). The fetch
list is hash-partitioned by host so one host is in one partition: one fetch task owns a
host, which is what makes politeness hold across executors.
"""
from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from crawlkit import schemas, segment_names, storage
from crawlkit.conf import Conf
from crawlkit.stages.capped_top import capped_top, cut_points
from crawlkit.stages.hot_queue import QUEUE, with_queue
from crawlkit.stages.interleave import interleaved, interleaved_metrics
from crawlkit.status import Status

# (a duplicate is refetched on its schedule: its text may change, and dedup decides again)
NEVER_GENERATED = (Status.EVICTED.value,)
VIRTUAL_PREFIX = "crawlkit:"  # reserved pseudo-URLs (e.g. OPIC's virtual page) are never fetched


def new_segment_name(spark: SparkSession, conf: Conf, now: datetime) -> str:
    """The round's logical time, suffixed past the segments already made at that time
    (crawlkit.segment_names)."""
    return segment_names.next_name(now, storage.list_segments(spark, conf["crawl.dir"]))


def due_candidates(crawldb: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """URLs that may be generated at ``now``."""
    lock_expired = F.col("generate_time") + F.make_dt_interval(secs=F.lit(conf["generate.lock_timeout"])) <= F.lit(now)
    return crawldb.filter(
        (F.col("fetch_time") <= F.lit(now))
        & ~F.col("status").isin(*NEVER_GENERATED)
        & ~F.col("url").startswith(VIRTUAL_PREFIX)
        & (F.col("score") >= F.lit(conf["generate.min_score"]))
        & (F.col("generated_segment").isNull() | lock_expired))


def cap_per_group(df: DataFrame, column: str, cap: int, order: list | None = None) -> DataFrame:
    """Keep the ``cap`` best rows of each value of ``column`` (0 = no cap), best by ``order``
    (default: score, then URL)."""
    if cap <= 0:
        return df
    rank = Window.partitionBy(column).orderBy(*(order or [F.col("score").desc(), F.col("url")]))
    return (df.withColumn("_rank", F.row_number().over(rank))
            .filter(F.col("_rank") <= cap).drop("_rank"))


def tie_break(conf: Conf) -> list:
    """How URLs of equal score are ordered (``generate.tie_break``).

    ``hash`` (default) orders them by a hash of the URL: deterministic, but unrelated to the
    URL's text, so a fetch list cut inside a tie takes a sample spread over the whole URL
    space. ``url`` (alphabetical) takes the tie's first hosts and directories in sort order
    round after round, a bias that compounds: those pages' links fill the next rounds' ties.
    The URL itself stays the last key, for a total order.
    """
    kind = conf["generate.tie_break"]
    if kind == "hash":
        return [F.xxhash64("url"), F.col("url")]
    if kind == "url":
        return [F.col("url")]
    raise ValueError(f"generate.tie_break = {kind!r}: expected hash or url")


def order_key(conf: Conf) -> list:
    """Sort order of the fetch list: the ordering score, then the tie break
    (hot_queue: the hot queue first, see crawlkit/stages/hot_queue.py)."""
    if conf["generate.policy"] == "hot_queue":
        return [F.col(QUEUE), F.col("score").desc(), *tie_break(conf)]
    return [F.col("score").desc(), *tie_break(conf)]


def generate(crawldb: DataFrame, conf: Conf, now: datetime, segment: str) -> DataFrame:
    """The fetch list (unpartitioned): capped, exact top-N, in fetch-list columns."""
    if conf["schedule.kind"] == "change_rate":  # refetches spend schedule.budget (stages/refetch.py)
        from crawlkit.stages.refetch import generate_change_rate
        return generate_change_rate(crawldb, conf, now, segment)
    policy = conf["generate.policy"]
    if policy not in ("score", "hot_queue", "interleave"):
        raise ValueError(f"generate.policy = {policy!r}: expected score, hot_queue or interleave")
    candidates = due_candidates(crawldb, conf, now)
    top_n = conf["crawl.topN"]

    def capped(df: DataFrame, order: list) -> DataFrame:
        df = cap_per_group(df, "host", conf["generate.max_per_host"], order)
        return cap_per_group(df, "domain", conf["generate.max_per_domain"], order)
    caps = capped if conf["generate.max_per_host"] > 0 or conf["generate.max_per_domain"] > 0 else None
    # bounds the candidates, to size the sample that places the prefixes' cuts (capped_top)
    population = crawldb.count() if caps and top_n > 0 and policy != "hot_queue" else 0

    metrics = interleaved_metrics(conf) if top_n > 0 else []
    if metrics:
        ordered = interleaved(candidates, metrics, top_n, tie_break(conf), caps, population)
    elif policy == "hot_queue":  # its order leads with the queue, not a metric: no prefix to cut
        ordered = capped(with_queue(candidates, conf, crawldb), order_key(conf)).orderBy(*order_key(conf))
        if top_n > 0:
            ordered = ordered.limit(top_n)
    elif top_n > 0:
        ties = tie_break(conf)
        cuts = cut_points(candidates, [F.col("score")], ties[0], top_n, population)[0] if caps else []
        ordered = capped_top(candidates, F.col("score"), ties, top_n, caps, cuts)
    else:
        ordered = capped(candidates, order_key(conf)).orderBy(*order_key(conf))
    return schemas.conform(ordered.withColumn("segment", F.lit(segment)), "fetchlist")


def partition_by_host(fetchlist: DataFrame, partitions: int) -> DataFrame:
    """One host per partition; within a partition, hosts together and best URLs first."""
    return (fetchlist.repartition(partitions, "host")
            .sortWithinPartitions("host", F.col("score").desc(), "url"))


def run_generate(spark: SparkSession, conf: Conf, now: datetime, segment: str | None = None) -> dict:
    """Write segments/<segment>/fetchlist and lock its URLs in the crawldb (one commit)."""
    crawl_dir = conf["crawl.dir"]
    segment = segment or new_segment_name(spark, conf, now)
    db_path = storage.crawldb_path(crawl_dir)
    table = storage.ensure_table(spark, db_path, "crawldb")
    fetchlist = generate(table.toDF(), conf, now, segment).cache()
    count = fetchlist.count()
    if count == 0:
        fetchlist.unpersist()
        return {"segment": None, "generated": 0}
    partitions = conf["generate.partitions"] or spark.sparkContext.defaultParallelism
    storage.write_segment_part(partition_by_host(fetchlist, partitions), crawl_dir, segment, "fetchlist", "fetchlist")
    hosts = fetchlist.select("host").distinct().count()
    with storage.commit_tag(spark, storage.generated_tag(segment)):
        (table.alias("db")
         .merge(fetchlist.select("url").alias("f"), "db.url = f.url")
         .whenMatchedUpdate(set={"generated_segment": F.lit(segment), "generate_time": F.lit(now)})
         .execute())
    fetchlist.unpersist()
    counters = {"segment": segment, "generated": count, "hosts": hosts, "partitions": partitions}
    storage.write_stats(spark, crawl_dir, segment, "generate", counters)
    return counters


def locked_by(segment: str) -> Column:
    """Rows that generate locked into ``segment`` (``run_generate``'s lock).

    The lock is a MERGE, and with deletion vectors a MERGE writes the rows it updates
    to new files: a segment's rows end up together in a few files whose statistics say
    ``generated_segment`` = that segment. A read, a MERGE or an overwrite with this
    predicate therefore opens those files only (Delta's data skipping), so reading,
    releasing or replacing a segment's rows (updatedb, abandoning a segment) costs
    O(segment), not O(crawldb)."""
    return F.expr(locked_by_sql(segment))


def locked_by_sql(segment: str) -> str:
    """``locked_by`` as SQL, for the APIs that take a predicate as text (Delta's
    ``replaceWhere``)."""
    quoted = segment.replace("'", "''")
    return f"generated_segment = '{quoted}'"
