"""Reading a finished crawl: the order pages were fetched in and the crawler's estimates.

A *crawled page* is a URL with a successful fetch (``success`` or ``not_modified``), counted
once, at its first such fetch: the paper counts pages visited, and a redirect, an error or
a refetch visits no new page (a redirect's target is fetched under its own URL later). The
order is by segment, then ``fetched_at`` (when the request was made), then URL.

Segments are plain Parquet, so they are read with pyarrow on the driver, without Spark:
local paths and the URIs pyarrow knows (``file://``, ``hdfs://``, ``s3://``). A segment part
without its ``_SUCCESS`` marker (a fetch that did not finish) is skipped and reported. What
the limited-buffer measure needs from the crawldb (a Delta table) is read through Spark: the
crawler's estimates as of each round (:func:`read_round_estimates`, for a replayed buffer)
and the pages its own buffer holds (:func:`read_buffer`).

Example::

    content, fetchlists, incomplete = read_segments("crawl")
    order = crawl_order(content, fetchlists)       # url, segment, fetched_at, estimate
    by_round = read_round_estimates(spark, "crawl")  # segment, url, estimate
    held = read_buffer(spark, "crawl")               # URLs
"""
from __future__ import annotations

import os

import pandas as pd
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawlkit.segment_names import order_key
from crawlkit.status import FetchStatus

CRAWLED = (FetchStatus.SUCCESS.value, FetchStatus.NOT_MODIFIED.value)
CONTENT_COLUMNS = ["url", "fetch_status", "fetched_at"]
FETCHLIST_COLUMNS = ["url", "score"]


def _filesystem(crawl_dir: str) -> tuple[pafs.FileSystem, str]:
    if "://" in crawl_dir:
        return pafs.FileSystem.from_uri(crawl_dir)
    return pafs.LocalFileSystem(), os.path.abspath(crawl_dir)


def read_segments(crawl_dir: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """All segments' content and fetch lists (with a ``segment`` column), and the segments
    whose content is missing or incomplete."""
    fs, root = _filesystem(str(crawl_dir))
    listing = fs.get_file_info(pafs.FileSelector(f"{root}/segments", allow_not_found=True))
    segments = sorted((i.base_name for i in listing if i.type == pafs.FileType.Directory), key=order_key)
    content, fetchlists, incomplete = [], [], []
    for segment in segments:
        part = f"{root}/segments/{segment}"
        if fs.get_file_info(f"{part}/content/_SUCCESS").type == pafs.FileType.NotFound:
            incomplete.append(segment)
            continue
        content.append(_read_part(fs, f"{part}/content", CONTENT_COLUMNS, segment))
        if fs.get_file_info(f"{part}/fetchlist/_SUCCESS").type != pafs.FileType.NotFound:
            fetchlists.append(_read_part(fs, f"{part}/fetchlist", FETCHLIST_COLUMNS, segment))
    return (_concat(content, CONTENT_COLUMNS + ["segment"]),
            _concat(fetchlists, FETCHLIST_COLUMNS + ["segment"]), incomplete)


def _read_part(fs: pafs.FileSystem, path: str, columns: list[str], segment: str) -> pd.DataFrame:
    frame = pq.read_table(path, columns=columns, filesystem=fs).to_pandas()
    return frame.assign(segment=segment)


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def crawl_order(content: pd.DataFrame, fetchlists: pd.DataFrame) -> pd.DataFrame:
    """The crawled pages in fetch order: url, segment, fetched_at, and ``estimate``, the
    ordering score the page had in its segment's fetch list (NaN when it is not there) —
    the crawler's estimate of its importance when it was fetched."""
    crawled = content[content["fetch_status"].isin(CRAWLED)]
    crawled = crawled.sort_values(["segment", "fetched_at", "url"], kind="stable",
                                  key=lambda c: c.map(order_key) if c.name == "segment" else c)
    first = crawled.drop_duplicates("url", keep="first")[["url", "segment", "fetched_at"]]
    scores = fetchlists.rename(columns={"score": "estimate"})[["segment", "url", "estimate"]]
    return first.merge(scores, on=["segment", "url"], how="left", validate="one_to_one"
                       ).reset_index(drop=True)


def read_round_estimates(spark, crawl_dir: str) -> pd.DataFrame:
    """The crawler's estimate of the crawled pages as of each round, for the limited-buffer
    replay: (segment, url, estimate) for every segment with crawled pages and every page
    crawled in it or before (the pages that can be in the buffer then).

    The estimate is the crawldb ``score`` at the version of the segment's
    ``generate:<segment>`` commit: the scores the crawler generated that round's fetch list
    by, as the crawler's own buffer (crawlkit/stages/evict.py) ranks its pages by the
    crawldb's current scores. Read through Spark (the crawldb is Delta), one version per
    segment, joined with the crawled URLs and collected to the driver. Delta keeps old
    versions for a while only (log retention, VACUUM): a segment whose version is gone is a
    ValueError naming it, never an estimate from another round.
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    from crawlkit import storage

    pages = crawl_order(*read_segments(str(crawl_dir))[:2])
    segments = list(dict.fromkeys(pages["segment"]))
    db_path = storage.crawldb_path(crawl_dir)
    versions = {tag: commit["version"] for commit in storage.history(spark, db_path)
                for tag in storage.tags_of(commit["userMetadata"])}    # oldest first: the newest wins
    rounds = pages["segment"].map({segment: number for number, segment in enumerate(segments)})
    crawled = F.broadcast(spark.createDataFrame(pd.DataFrame({"url": pages["url"], "round": rounds}),
                                                "url string, round int"))
    instead = "use --buffer crawldb (the crawler's own buffer) or evaluate_crawl(..., estimates={url: score})"
    frames = []
    for number, segment in enumerate(segments):
        version = versions.get(storage.generated_tag(segment))
        if version is None:
            raise ValueError(f"segment {segment}: its generate commit is no longer in the crawldb's "
                             f"history (Delta log retention), so the crawler's estimates of that round "
                             f"are lost; {instead}")
        try:   # (checked only when the read fails: a check up front lists every file of every version)
            rows = (storage.read_table(spark, db_path, "crawldb", version=version)
                    .join(crawled.filter(F.col("round") <= number), "url")
                    .select(F.lit(segment).alias("segment"), "url", F.col("score").alias("estimate"))
                    .collect())
        except (Py4JJavaError, PySparkException) as exc:
            reason = storage.unreadable_version(spark, db_path, "crawldb", version) or str(exc).splitlines()[0]
            raise ValueError(f"segment {segment}: the crawldb as of its generate (version {version}) "
                             f"cannot be read ({reason}); VACUUM may have removed its files; {instead}") from exc
        frames.append(pd.DataFrame(rows, columns=["segment", "url", "estimate"]))
    return _concat(frames, ["segment", "url", "estimate"])


def read_buffer(spark, crawl_dir: str) -> set[str]:
    """URLs the crawler's own limited buffer holds at the end, by the predicate the buffer
    itself uses (crawlkit/stages/evict.py: stored pages, and readmitted ones awaiting their
    refetch). Not "every crawled page not evicted": a duplicate, or a page that went gone or
    redirected on refetch, holds no place. Read through Spark: the crawldb is Delta."""
    from crawlkit import storage
    from crawlkit.scoring.base import real_pages
    from crawlkit.stages.evict import holds_place

    db = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    return {row["url"] for row in real_pages(db).filter(holds_place()).select("url").collect()}
