"""inject: a seeds file into the crawldb as unfetched URLs.

Seeds file format, one seed per line (as Nutch's injector)::

    http://www.example.edu/            # a URL alone
    http://www.example.org/  score=2.5  topic=sports    # optional score and metadata

Fields are separated by whitespace (tab or spaces); ``#`` starts a comment; blank lines are
skipped. A bad line (not UTF-8, too long, unparseable URL, unsupported scheme, filtered out,
a malformed field) is reported with its line number and skipped; the rest are injected.
Injecting is idempotent: URLs already in the crawldb keep their state.
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


def parse_seed_lines(lines: Iterable[bytes], conf: Conf) -> SeedReport:
    """Parse raw seed lines into normalized, filtered seeds and numbered errors."""
    normalizer = UrlNormalizer(conf.section("urls"))
    url_filter = UrlFilter(conf.section("urls"))
    max_len = conf["inject.max_line_length"]
    report = SeedReport()
    seen: set[str] = set()
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
        if url in seen:
            continue
        seen.add(url)
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
            metadata[key] = value
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


def run_inject(spark: SparkSession, seeds_path: str, conf: Conf, now: datetime) -> dict:
    """Inject a seeds file; returns counters (injected, already known, bad lines)."""
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
    fresh = seeds_df.join(existing, on="url", how="left_anti")
    fresh_rows = seed_rows(fresh, table.toDF(), conf, now)
    before = real_pages(table.toDF()).count()   # OPIC's virtual page is no seed
    with storage.commit_tag(spark, f"inject:{now.isoformat()}"):
        # One commit: new seeds are inserted; the only existing row a scorer may hand back is
        # OPIC's virtual page, whose cash the new seeds took.
        (table.alias("db").merge(fresh_rows.alias("s"), "db.url = s.url")
         .whenMatchedUpdate(set={"opic_cash": "s.opic_cash"})
         .whenNotMatchedInsertAll().execute())
    injected = real_pages(table.toDF()).count() - before
    return {"seeds": len(report.seeds), "injected": injected,
            "already_known": len(report.seeds) - injected,
            "bad_lines": len(report.errors),
            "errors": [f"line {n}: {why}" for n, why in report.errors[:1000]]}
