"""Reading a finished crawl: the order pages were fetched in and the crawler's estimates.

A *crawled page* is a URL with a successful fetch (``success`` or ``not_modified``), counted
once, at its first such fetch: the paper counts pages visited, and a redirect, an error or
a refetch visits no new page (a redirect's target is fetched under its own URL later). The
order is by segment, then ``fetched_at`` (when the request was made), then URL.

Segments are plain Parquet, so they are read with pyarrow on the driver, without Spark:
local paths and the URIs pyarrow knows (``file://``, ``hdfs://``, ``s3://``). A segment part
without its ``_SUCCESS`` marker (a fetch that did not finish) is skipped and reported.

Example::

    content, fetchlists, incomplete = read_segments("crawl")
    order = crawl_order(content, fetchlists)       # url, segment, fetched_at, estimate
"""
from __future__ import annotations

import os

import pandas as pd
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from crawlkit.segment_names import order_key
from crawlkit.status import FetchStatus, Status

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


def read_evicted(spark, crawl_dir: str) -> set[str]:
    """URLs the crawler's own limited buffer evicted (crawldb status ``evicted``), read
    through Spark because the crawldb is a Delta table."""
    from pyspark.sql import functions as F

    from crawlkit import storage

    db = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    rows = db.filter(F.col("status") == Status.EVICTED.value).select("url").collect()
    return {row["url"] for row in rows}
