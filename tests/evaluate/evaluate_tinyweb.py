"""The tiny web every evaluation test uses, and a writer of segment parts.

8 pages, T = 8. In-degree counts distinct other pages linking in (the duplicate a->b and
the self-link d->d do not count):

    page  links to   in-degree  indegree>1  indegree>2  PageRank rank  label
    a     b b c      2 (c f)    hot         -           3              course
    b     c d        1 (a)      -           -           4              other
    c     a d        4 (a b d e) hot        hot         1              course
    d     c d        3 (b c e)  hot         hot         2              other
    e     c d        0          -           -           6-8 (tie)      other
    f     a          0          -           -           6-8 (tie)      other
    g     h          0          -           -           6-8 (tie)      course
    h     -          1 (g)      -           -           5              other

The crawl under test fetches a, b, e, c, f, d (g and h never).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from crawlkit import schemas

NAMES = "abcdefgh"
LINKS = [("a", "b"), ("a", "b"), ("a", "c"), ("b", "c"), ("b", "d"), ("c", "a"), ("c", "d"),
         ("d", "c"), ("d", "d"), ("e", "c"), ("e", "d"), ("f", "a"), ("g", "h")]
LABELS = {"a": "course", "c": "course", "g": "course"}
CRAWL = "abecfd"
# The crawler's estimate of each page when it fetched it (its fetch-list score); c and f tie.
ESTIMATES = {"a": 0.5, "b": 0.2, "e": 0.1, "c": 0.4, "f": 0.4, "d": 0.9}
SEGMENT_1, SEGMENT_2, SEGMENT_3 = "20240101000000", "20240102000000", "20240103000000"

ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "double": pa.float64(),
               "boolean": pa.bool_(), "binary": pa.binary(), "timestamp": pa.timestamp("us"),
               "map<string,string>": pa.map_(pa.string(), pa.string())}
DEFAULTS = {"string": "", "int": 0, "double": 0.0, "boolean": False}


def url(name: str) -> str:
    return f"http://t.test/{name}.html"


def ids(names: str) -> np.ndarray:
    return np.array([NAMES.index(n) for n in names])


def write_part(crawl, segment: str, part: str, table: str, rows: list[dict]) -> None:
    """A segment part as Spark writes it (Parquet in the declared schema, a _SUCCESS marker);
    columns not given are null, or a neutral value when not nullable."""
    columns = schemas.declaration(table)["columns"]
    schema = pa.schema([pa.field(c["name"], ARROW_TYPES[c["type"]], c["nullable"]) for c in columns])
    full = [{c["name"]: row.get(c["name"], None if c["nullable"] else DEFAULTS.get(c["type"]))
             for c in columns} | {"segment": segment} for row in rows]
    path = crawl / "segments" / segment / part
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(full, schema), path / "part-00000.parquet")
    (path / "_SUCCESS").touch()
