"""Output formats: the records as Parquet, JSON Lines, Solr update JSON or Elasticsearch bulk.

Every format is written by Spark, ``export.partitions`` files per directory, so a bulk loader
can post the files in parallel and no file is assembled on the driver. Parquet and JSON Lines
carry the record schema (schemas/boosts.json) as is. Solr and Elasticsearch/OpenSearch get one
flat document per record with the same field names in both (see :data:`SOLR_FIELDS`, the
index template): the map of score components becomes ``component_<name>`` fields, and the
score is ``crawl_score`` because ``score`` is Solr's relevance pseudo-field.

* solr: one ``{"add":{"doc":{...}}}`` update command per line; Solr's JSON update handler
  reads a stream of commands, so each file is one POST to ``/update``. A RankField is not
  stored, so the boost goes twice: ``boost`` (pfloat, stored) and ``boost_rank`` (RankField).
* elasticsearch: bulk NDJSON, an ``{"index":{"_index","_id"}}`` action line then the
  document; ``boost`` is a ``rank_feature`` field. ``_id`` is the URL, or its SHA-256 when the
  URL is longer than Elasticsearch's 512-byte id limit.

Deletions of an incremental export use the same format: ``{"delete":{"id":...}}`` lines for
Solr, ``{"delete":{"_index","_id"}}`` actions for Elasticsearch, a ``url`` column otherwise.
The ``state`` part (what the index holds after loading the export) is Parquet of the record
schema in every format: it is read back by crawlkit, not by a loader.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from crawlkit import schemas
from crawlkit.conf import Conf

FORMATS = ("parquet", "jsonl", "solr", "elasticsearch")
ES_MAX_ID_BYTES = 512

# Field types of Solr's _default configset (string, text_general, p*) plus the RankField type.
SOLR_FIELD_TYPES = [{"name": "crawlkit_rank", "class": "solr.RankField"}]
SOLR_FIELDS = [
    {"name": "url", "type": "string", "stored": True, "required": True},
    {"name": "source_url", "type": "string", "stored": True},
    {"name": "title", "type": "text_general", "stored": True},
    {"name": "digest", "type": "string", "stored": True},
    {"name": "boost", "type": "pfloat", "stored": True},
    {"name": "boost_rank", "type": "crawlkit_rank"},
    {"name": "crawl_score", "type": "pdouble", "stored": True},
    {"name": "crawl_version", "type": "plong", "stored": True},
]
SOLR_DYNAMIC_FIELDS = [{"name": "component_*", "type": "pdouble", "stored": True}]


def _doc_fields() -> list[Column]:
    """The document fields common to Solr and Elasticsearch (components are added flat)."""
    return [F.col("url"), F.col("source_url"), F.col("title"), F.col("digest"), F.col("boost"),
            F.col("score").alias("crawl_score"), F.col("crawl_version")]


def flat_json(fields: list[Column], components: Column) -> Column:
    """A JSON object of ``fields`` plus one ``component_<name>`` member per map entry (a map's
    keys cannot become struct fields, so the two serialised objects are spliced)."""
    base = F.to_json(F.struct(*fields))
    comps = F.coalesce(components, F.create_map().cast("map<string,double>"))
    extra = F.to_json(F.transform_keys(comps, lambda k, _v: F.concat(F.lit("component_"), k)))
    spliced = F.concat(base.substr(F.lit(1), F.length(base) - 1), F.lit(","),
                       extra.substr(F.lit(2), F.length(extra)))
    return F.when(F.size(comps) > 0, spliced).otherwise(base)


def es_id(url: Column) -> Column:
    return F.when(F.octet_length(url) <= ES_MAX_ID_BYTES, url).otherwise(F.sha2(url, 256))


def _es_action(kind: str, conf: Conf) -> Column:
    target = F.struct(F.lit(conf["export.index"]).alias("_index"), es_id(F.col("url")).alias("_id"))
    return F.to_json(F.struct(target.alias(kind)))


def _lines(records: DataFrame, conf: Conf) -> DataFrame:
    fmt = conf["export.format"]
    if fmt == "solr":
        doc = flat_json([F.col("url").alias("id"), *_doc_fields(),
                         F.col("boost").alias("boost_rank")], F.col("components"))
        return records.select("url", F.concat(F.lit('{"add":{"doc":'), doc, F.lit("}}")).alias("value"))
    doc = flat_json(_doc_fields(), F.col("components"))
    return records.select("url", F.concat_ws("\n", _es_action("index", conf), doc).alias("value"))


def _delete_lines(urls: DataFrame, conf: Conf) -> DataFrame:
    if conf["export.format"] == "solr":
        line = F.concat(F.lit('{"delete":'), F.to_json(F.struct(F.col("url").alias("id"))), F.lit("}"))
    else:
        line = _es_action("delete", conf)
    return urls.select("url", line.alias("value"))


def _save(frame: DataFrame, conf: Conf, path: str) -> None:
    """``export.partitions`` files, rows spread by URL hash and sorted (reproducible files)."""
    frame = frame.repartition(conf["export.partitions"], "url").sortWithinPartitions("url")
    fmt = conf["export.format"]
    if fmt == "parquet":
        frame.write.mode("overwrite").parquet(path)
    elif fmt == "jsonl":
        frame.write.mode("overwrite").option("ignoreNullFields", "false").json(path)
    else:
        frame.select("value").write.mode("overwrite").text(path)


def write_records(records: DataFrame, conf: Conf, path: str) -> None:
    frame = schemas.conform(records, "boosts")
    _save(frame if conf["export.format"] in ("parquet", "jsonl") else _lines(frame, conf), conf, path)


def write_state(records: DataFrame, conf: Conf, path: str) -> None:
    """The records as Parquet whatever the format (an empty state still gets its schema)."""
    schemas.conform(records, "boosts").repartition(conf["export.partitions"], "url") \
        .sortWithinPartitions("url").write.mode("overwrite").parquet(path)


def write_deletes(urls: DataFrame, conf: Conf, path: str) -> None:
    frame = schemas.conform(urls, "deletes")
    _save(frame if conf["export.format"] in ("parquet", "jsonl") else _delete_lines(frame, conf), conf, path)


def solr_schema_xml() -> str:
    """The field type and fields as a managed-schema / schema.xml fragment."""
    root = ET.Element("schema", name="crawlkit-export", version="1.6")
    root.append(ET.Comment(" crawlkit export fields: add to managed-schema; the types string, "
                           "text_general, pfloat, pdouble and plong and the uniqueKey id come with "
                           "Solr's _default configset. Rank with q=... _query_:{!rank f=boost_rank} "))
    for tag, entries in (("fieldType", SOLR_FIELD_TYPES), ("field", SOLR_FIELDS),
                         ("dynamicField", SOLR_DYNAMIC_FIELDS)):
        for entry in entries:
            ET.SubElement(root, tag, {k: str(v).lower() if isinstance(v, bool) else v for k, v in entry.items()})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def solr_schema_api() -> str:
    """The same as Schema API commands (POST to /solr/<collection>/schema)."""
    return json.dumps({"add-field-type": SOLR_FIELD_TYPES, "add-field": SOLR_FIELDS,
                       "add-dynamic-field": SOLR_DYNAMIC_FIELDS}, indent=1) + "\n"


def es_index_template(conf: Conf) -> str:
    """A composable index template (PUT _index_template/<index>; OpenSearch takes it too)."""
    index = conf["export.index"]
    template = {
        "index_patterns": [index, f"{index}-*"],
        "template": {"mappings": {
            "dynamic_templates": [{"score_components": {"match": "component_*", "mapping": {"type": "double"}}}],
            "properties": {
                "url": {"type": "keyword"}, "source_url": {"type": "keyword"},
                "title": {"type": "text"}, "digest": {"type": "keyword"},
                "boost": {"type": "rank_feature"}, "crawl_score": {"type": "double"},
                "crawl_version": {"type": "long"},
            }}},
        "_meta": {"source": "crawlkit export (docs/export.md)"},
    }
    return json.dumps(template, indent=1) + "\n"


def schema_files(conf: Conf) -> dict[str, str]:
    """Target-side declarations written next to the data: file name -> text."""
    fmt = conf["export.format"]
    if fmt == "solr":
        return {"solr-schema.xml": solr_schema_xml(), "solr-schema-api.json": solr_schema_api()}
    if fmt == "elasticsearch":
        return {"index-template.json": es_index_template(conf)}
    return {}
