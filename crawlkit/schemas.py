"""Table schemas, loaded from schemas/*.json: the one source of truth for every table.

Writers call :func:`conform` before writing so column order, types and nullability always
match the declaration; readers pass :func:`struct` so nothing is inferred.

Example::

    crawldb_df = conform(df, "crawldb")
"""
from __future__ import annotations

import json
from functools import lru_cache

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.types import StructField, StructType

from crawlkit.paths import read_shipped, schemas_dir


@lru_cache(maxsize=None)
def declaration(table: str) -> dict:
    return json.loads(read_shipped(schemas_dir() / f"{table}.json"))


def version(table: str) -> int:
    return int(declaration(table)["version"])


_ATOMIC = {
    "string": T.StringType(), "int": T.IntegerType(), "bigint": T.LongType(),
    "double": T.DoubleType(), "boolean": T.BooleanType(), "binary": T.BinaryType(),
    "timestamp": T.TimestampType(), "date": T.DateType(),
}


def _parse_type(ddl: str) -> T.DataType:
    """Parse a Spark DDL type (``array<struct<a:string>>``...) without a JVM, so schemas load
    on executors and in plain-Python tools too."""
    parsed, rest = _parse_at(ddl.replace(" ", ""))
    if rest:
        raise ValueError(f"trailing text in type {ddl!r}: {rest!r}")
    return parsed


def _parse_at(text: str) -> tuple[T.DataType, str]:
    for name, atomic in _ATOMIC.items():
        if text.startswith(name) and not text[len(name):len(name) + 1].isalnum():
            return atomic, text[len(name):]
    if text.startswith("array<"):
        element, rest = _parse_at(text[6:])
        return T.ArrayType(element, True), _expect(rest, ">")
    if text.startswith("map<"):
        key, rest = _parse_at(text[4:])
        value, rest = _parse_at(_expect(rest, ","))
        return T.MapType(key, value, True), _expect(rest, ">")
    if text.startswith("struct<"):
        fields, rest = [], text[7:]
        while True:
            name, _, rest = rest.partition(":")
            dtype, rest = _parse_at(rest)
            fields.append(T.StructField(name, dtype, True))
            if rest.startswith(">"):
                return T.StructType(fields), rest[1:]
            rest = _expect(rest, ",")
    raise ValueError(f"unknown type at {text!r}")


def _expect(text: str, token: str) -> str:
    if not text.startswith(token):
        raise ValueError(f"expected {token!r} at {text!r}")
    return text[len(token):]


@lru_cache(maxsize=None)
def struct(table: str) -> StructType:
    """The declared schema as a Spark StructType."""
    return StructType([
        StructField(c["name"], _parse_type(c["type"]), c["nullable"], {"comment": c["description"]})
        for c in declaration(table)["columns"]
    ])


def columns(table: str) -> list[str]:
    return [c["name"] for c in declaration(table)["columns"]]


def derived(table: str) -> dict[str, str]:
    """Columns whose value is a function of other columns of the row, as SQL expressions
    (``"derived"`` in the declaration): ``conform`` computes them where a row lacks them, and
    a table written before they were declared gets them once (``storage.ensure_table``)."""
    return {c["name"]: c["derived"] for c in declaration(table)["columns"] if "derived" in c}


def data_skipping_columns(table: str) -> list[str] | None:
    """The columns Delta keeps file statistics for (``"data_skipping"`` in the declaration;
    None: Delta's default, the first 32 columns)."""
    spec = declaration(table).get("data_skipping")
    return list(spec["columns"]) if spec else None


def conform(df: DataFrame, table: str) -> DataFrame:
    """Select the declared columns in order, cast to their types; missing derived columns
    are computed, missing nullable columns become null. A missing non-nullable column is a
    programming error and raises."""
    have = set(df.columns)
    computed = derived(table)
    out = []
    for field in struct(table).fields:
        if field.name in have:
            out.append(F.col(field.name).cast(field.dataType).alias(field.name))
        elif field.name in computed:
            out.append(F.expr(computed[field.name]).cast(field.dataType).alias(field.name))
        elif field.nullable:
            out.append(F.lit(None).cast(field.dataType).alias(field.name))
        else:
            raise ValueError(f"{table}: column {field.name!r} is required but missing")
    return df.select(*out)


def frame(spark, table: str, records: list[dict]) -> DataFrame:
    """Rows of ``table`` from dicts (absent keys are null), derived columns computed: how
    code builds a few rows by hand (OPIC's virtual page, tests).

    Example::

        frame(spark, "crawldb", [{"url": "http://a.test/", "host": "a.test", ...}])
    """
    computed = derived(table)
    given = StructType([f for f in struct(table).fields if f.name not in computed])
    return conform(spark.createDataFrame([tuple(r.get(f.name) for f in given.fields) for r in records], given),
                   table)


def empty(spark, table: str) -> DataFrame:
    return spark.createDataFrame([], struct(table))
