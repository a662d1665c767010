"""inject: a seeds file into the crawldb as unfetched URLs.

Seeds file format, one seed per line (as Nutch's injector)::

    http://www.example.edu/            # a URL alone
    http://www.example.org/  score=2.5  topic=sports    # optional score and metadata

Fields are separated by whitespace (tab or spaces); ``#`` starts a comment; blank lines are
skipped; a field with an empty value (``spam=``) names a key the URL must not have. A bad line
(not UTF-8, too long, unparseable URL, unsupported scheme, filtered out, a malformed field) is
reported with its line number and skipped; a line whose URL an earlier line already gave
(after normalization) is reported too, and the first is kept. The rest are injected.

Injecting is idempotent: URLs already in the crawldb keep their state, unless asked (as
Nutch's ``db.injector.update``), which is how an operator acts on URLs the crawl already knows:

* ``inject.update`` (``--update``): the line's metadata is merged into the known URL's (its
  keys replace the row's, an empty value removes the key): flag a link farm ``spam=true`` so
  its links stop voting, or take the flag back with ``spam=``. A ``score=`` is not applied to a
  known URL: the scoring stage recomputes every score each round.
* ``inject.refetch`` (``--refetch``): the known URL is due now with its transient-failure
  count reset, gone and retrying URLs included (a site that was down is back). An ``evicted``
  URL is left to the limited buffer (crawlkit.stages.evict), which decides what it holds.
"""
from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from crawlkit import storage
from crawlkit.conf import Conf, ConfError
from crawlkit.crawldb import new_entries
from crawlkit.status import Status
from crawlkit.urls import UrlFilter, UrlNormalizer, domain_of, host_of


_COMMENT = re.compile(r"(?:^|\s)#")  # a '#' starting a token; '#' inside a URL is a fragment


@dataclass
class Seed:
    url: str
    score: float | None
    metadata: dict[str, str]


@dataclass
class SeedReport:
    seeds: list[Seed] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)
    repeats: list[tuple[int, int]] = field(default_factory=list)  # (line number, first line)


def parse_seed_lines(lines: Iterable[bytes], conf: Conf) -> SeedReport:
    """Parse raw seed lines into normalized, filtered seeds and numbered errors."""
    normalizer = UrlNormalizer(conf.section("urls"))
    url_filter = UrlFilter(conf.section("urls"))
    max_len = conf["inject.max_line_length"]
    report = SeedReport()
    first_line: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if len(raw) > max_len:
            report.errors.append((number, f"line longer than {max_len} bytes"))
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            report.errors.append((number, f"not UTF-8 (byte {exc.start})"))
            continue
        line = _COMMENT.split(line, maxsplit=1)[0].strip()
        if not line:
            continue
        fields = line.split()
        url = normalizer(fields[0])
        if url is None:
            report.errors.append((number, f"invalid URL {fields[0][:200]!r}"))
            continue
        reason = url_filter.check(url)
        if reason:
            report.errors.append((number, f"URL rejected by filter ({reason}): {url[:200]}"))
            continue
        score, metadata, bad = _parse_fields(fields[1:])
        if bad:
            report.errors.append((number, bad))
            continue
        if url in first_line:
            report.repeats.append((number, first_line[url]))
            continue
        first_line[url] = number
        report.seeds.append(Seed(url, score, metadata))
    return report


def _parse_fields(fields: list[str]) -> tuple[float | None, dict[str, str], str | None]:
    score, metadata = None, {}
    for item in fields:
        key, sep, value = item.partition("=")
        if not sep or not key:
            return None, {}, f"field {item[:100]!r} is not key=value"
        if key == "score":
            try:
                score = float(value)
            except ValueError:
                return None, {}, f"score {value[:50]!r} is not a number"
            if not math.isfinite(score) or score < 0:
                return None, {}, f"score {value[:50]!r} must be a finite non-negative number"
        else:
            metadata[key] = value   # an empty value removes the key (known_seed_changes)
    return score, metadata, None


def seed_rows(fresh: DataFrame, crawldb: DataFrame, conf: Conf, now: datetime) -> DataFrame:
    """Complete crawldb rows for new seeds. Under OPIC the seeds share the virtual page's
    cash, and the virtual page's row (with the cash it has left) comes along, to be inserted
    on the first inject or have its cash updated later."""
    if conf["scoring.scorer"] != "opic":
        return new_entries(fresh, conf, now)
    from crawlkit.scoring import VIRTUAL_URL, opic_inject
    from crawlkit.scoring.opic import virtual_page_row

    rows = opic_inject(fresh, crawldb).cache()
    virtual = rows.filter(F.col("url") == VIRTUAL_URL).select("opic_cash").collect()
    seeds = new_entries(rows.filter(F.col("url") != VIRTUAL_URL), conf, now)
    if virtual:
        seeds = seeds.unionByName(virtual_page_row(fresh.sparkSession, virtual[0]["opic_cash"]))
    return seeds


def read_seed_file(spark: SparkSession, path: str) -> list[bytes]:
    """The seeds file's lines (bytes, line ends and a UTF-8 byte-order mark dropped): a local
    path, or any URI Hadoop reads (hdfs://, s3a://, file://), as a cluster job is given."""
    if "://" in path:
        data = storage.read_bytes(spark, path)
    else:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            raise ConfError(f"seeds file {path}: {exc.strerror}") from None
    if data is None:
        raise ConfError(f"seeds file {path} not found")
    if data.startswith(codecs.BOM_UTF8):     # saved by Notepad or Excel as "UTF-8 with BOM"
        data = data[len(codecs.BOM_UTF8):]
    return [line.rstrip(b"\r") for line in data.split(b"\n")]


def known_seed_changes(seeds: DataFrame, crawldb: DataFrame, *, update: bool, refetch: bool,
                       now: datetime) -> DataFrame:
    """(url, metadata, fetch_time, retries) of the known URLs a seeds file changes: under
    ``update`` the seed's metadata merged into the row's (an empty value removes the key),
    under ``refetch`` due ``now`` with no transient failures counted (not ``evicted`` URLs)."""
    known = crawldb.select("url", "status", "metadata", "fetch_time", "retries").join(
        seeds.select("url", F.col("metadata").alias("_seed")), "url")
    old = F.coalesce(F.col("metadata"), F.create_map().cast("map<string,string>"))
    seed = F.coalesce(F.col("_seed"), F.create_map().cast("map<string,string>"))
    # the row's keys the line does not name, then the line's keys with a value (an empty one
    # removes its key; the row's own empty or null values are left as they are)
    merged = F.map_concat(F.map_filter(old, lambda k, _v: ~F.array_contains(F.map_keys(seed), k)),
                          F.map_filter(seed, lambda _k, v: v != F.lit("")))
    due = F.lit(refetch) & (F.col("status") != Status.EVICTED.value)
    metadata = merged if update else F.col("metadata")
    same = F.array_sort(F.map_entries(old)) == F.array_sort(F.map_entries(merged))  # maps: no "="
    changed = due | (F.lit(update) & ~same)
    return known.filter(changed).select(
        "url", metadata.alias("metadata"),
        F.when(due, F.lit(now).cast("timestamp")).otherwise(F.col("fetch_time")).alias("fetch_time"),
        F.when(due, F.lit(0)).otherwise(F.col("retries")).alias("retries"))


def run_inject(spark: SparkSession, seeds_path: str, conf: Conf, now: datetime) -> dict:
    """Inject a seeds file; returns counters (injected, already known, updated, bad and
    repeated lines). One commit: a crash leaves the crawldb as it was."""
    from crawlkit.scoring import get_scorer, real_pages

    report = parse_seed_lines(read_seed_file(spark, seeds_path), conf)
    scorer = get_scorer(conf["scoring.scorer"])
    default_score = scorer.initial_score(conf)
    rows = [(s.url, host_of(s.url), domain_of(host_of(s.url)),
             s.score if s.score is not None else default_score, s.metadata) for s in report.seeds]
    schema = T.StructType([
        T.StructField("url", T.StringType(), False), T.StructField("host", T.StringType(), False),
        T.StructField("domain", T.StringType(), True), T.StructField("score", T.DoubleType(), False),
        T.StructField("metadata", T.MapType(T.StringType(), T.StringType()), True)])
    seeds_df = spark.createDataFrame(rows, schema)
    path = storage.crawldb_path(conf["crawl.dir"])
    table = storage.ensure_table(spark, path, "crawldb", deletion_vectors=conf["db.deletion_vectors"])
    existing = table.toDF().select("url")
    fresh = seeds_df.join(existing, on="url", how="left_anti").withColumn(
        "metadata", F.map_filter("metadata", lambda _k, v: v != F.lit("")))
    fresh_rows = seed_rows(fresh, table.toDF(), conf, now).withColumn("_known", F.lit(False))
    update, refetch = conf["inject.update"], conf["inject.refetch"]
    if update or refetch:
        known = known_seed_changes(seeds_df, table.toDF(), update=update, refetch=refetch, now=now)
        fresh_rows = fresh_rows.unionByName(known.withColumn("_known", F.lit(True)),
                                            allowMissingColumns=True)
    source = fresh_rows.localCheckpoint(eager=True)   # read once: counted, then merged
    updated = source.filter("_known").count()
    before = real_pages(table.toDF()).count()   # OPIC's virtual page is no seed
    columns = [f.name for f in table.toDF().schema.fields]
    with storage.commit_tag(spark, f"inject:{now.isoformat()}"):
        # One commit: new seeds are inserted; known seeds changed as asked; the only other
        # existing row a scorer may hand back is OPIC's virtual page, whose cash the new
        # seeds took.
        (table.alias("db").merge(source.alias("s"), "db.url = s.url")
         .whenMatchedUpdate(condition="s._known", set={
             "metadata": "s.metadata", "fetch_time": "s.fetch_time", "retries": "s.retries"})
         .whenMatchedUpdate(set={"opic_cash": "s.opic_cash"})
         .whenNotMatchedInsert(values={c: f"s.{c}" for c in columns}).execute())
    injected = real_pages(table.toDF()).count() - before
    return {"seeds": len(report.seeds), "injected": injected,
            "already_known": len(report.seeds) - injected, "updated": updated,
            "bad_lines": len(report.errors), "repeated_lines": len(report.repeats),
            "errors": [f"line {n}: {why}" for n, why in report.errors[:1000]],
            "repeats": [f"line {n}: the URL of line {first} again (line {first} kept)"
                        for n, first in report.repeats[:1000]]}
