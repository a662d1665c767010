"""Each output format against its target's documented structure, and the schema files parsed."""
import hashlib
import json
import xml.etree.ElementTree as ET
from fnmatch import fnmatch

from exporthelpers import LONG, PAGES, json_lines, part_files

from crawlkit import schemas
from crawlkit.export.formats import SOLR_DYNAMIC_FIELDS, SOLR_FIELDS

def check_manifest(directory, counters):
    with open(directory / "_export.json", encoding="utf-8") as fh:
        assert json.load(fh) == json.loads(json.dumps(counters))
    assert counters["records"] == len(PAGES)
    assert len(part_files(str(directory / "records"))) <= 2  # export.partitions


def test_parquet_has_the_declared_schema(exported, spark):
    directory, counters = exported["parquet"]
    check_manifest(directory, counters)
    df = spark.read.parquet(str(directory / "records"))
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in schemas.struct("boosts")]
    assert {r.url: r.title for r in df.collect()} == {u: p["title"] for u, p in PAGES.items()}


def test_jsonl_lines_are_records(exported):
    directory, counters = exported["jsonl"]
    check_manifest(directory, counters)
    types = {"string": str, "double": float, "bigint": int, "map<string,double>": dict}
    lines = json_lines(str(directory / "records"))
    assert sorted(line["url"] for line in lines) == sorted(PAGES)
    for line in lines:
        assert list(line) == schemas.columns("boosts")  # nulls written, not dropped
        for column in schemas.declaration("boosts")["columns"]:
            value = line[column["name"]]
            assert (value is None and column["nullable"]) or isinstance(value, types[column["type"]]), column
        assert line["boost"] > 0
        assert line["components"] == PAGES[line["url"]]["scores"]


def declared(name, fields):
    return any(fnmatch(name, f["name"]) for f in fields)


def test_solr_update_commands_match_the_schema_files(exported):
    directory, counters = exported["solr"]
    check_manifest(directory, counters)
    commands = json_lines(str(directory / "records"))
    assert len(commands) == len(PAGES)
    root = ET.parse(directory / "schema" / "solr-schema.xml").getroot()
    rank_types = {t.get("name") for t in root.iter("fieldType") if t.get("class") == "solr.RankField"}
    xml_fields = [dict(f.attrib) for f in root.iter("field")]
    assert {f["name"]: f["type"] for f in xml_fields}["boost_rank"] in rank_types
    with open(directory / "schema" / "solr-schema-api.json", encoding="utf-8") as fh:
        api = json.load(fh)
    assert [f["name"] for f in api["add-field"]] == [f["name"] for f in xml_fields]
    assert api["add-field-type"] == [{"name": "crawlkit_rank", "class": "solr.RankField"}]
    for command in commands:
        assert list(command) == ["add"] and list(command["add"]) == ["doc"]
        doc = command["add"]["doc"]
        page = PAGES[doc["url"]]
        assert doc["id"] == doc["url"] == doc["source_url"]
        assert doc.get("title") == page["title"]
        assert isinstance(doc["boost"], float) and doc["boost"] > 0 and doc["boost_rank"] == doc["boost"]
        assert doc["crawl_score"] == page["score"] and doc["crawl_version"] == 1
        assert {k[len("component_"):]: v for k, v in doc.items() if k.startswith("component_")} == page["scores"]
        # every field is declared (id is the _default configset's uniqueKey)
        assert all(k == "id" or declared(k, SOLR_FIELDS + SOLR_DYNAMIC_FIELDS) for k in doc), doc


def test_elasticsearch_bulk_alternates_actions_and_documents(exported):
    directory, counters = exported["elasticsearch"]
    check_manifest(directory, counters)
    lines = json_lines(str(directory / "records"))
    assert len(lines) == 2 * len(PAGES)
    with open(directory / "schema" / "index-template.json", encoding="utf-8") as fh:
        template = json.load(fh)
    assert template["index_patterns"] == ["web", "web-*"]
    mappings = template["template"]["mappings"]
    assert mappings["properties"]["boost"] == {"type": "rank_feature"}
    dynamic = [t["score_components"] for t in mappings["dynamic_templates"]]
    for action, doc in zip(lines[0::2], lines[1::2]):
        assert list(action) == ["index"] and set(action["index"]) == {"_index", "_id"}
        assert action["index"]["_index"] == "web"
        expected_id = doc["url"] if doc["url"] != LONG else hashlib.sha256(LONG.encode()).hexdigest()
        assert action["index"]["_id"] == expected_id and len(expected_id.encode()) <= 512
        assert "index" not in doc and isinstance(doc["boost"], float) and doc["boost"] > 0
        assert doc.get("title") == PAGES[doc["url"]]["title"]
        for field in doc:
            assert field in mappings["properties"] or any(fnmatch(field, t["match"]) for t in dynamic), field
