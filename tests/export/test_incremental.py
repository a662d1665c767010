"""Incremental export: only documents whose content, title or boost changed since what an
earlier export sent (its state), or since an older crawldb version rebuilt by Delta time travel
when no export of it has a state, plus deletions, as Elasticsearch bulk actions."""
import math
import os

import pytest
from delta.tables import DeltaTable

from exporthelpers import cli_export, crawldb_row, json_lines, parse_row, part_files

from crawlkit import storage

U = [f"http://p{i}.test/" for i in range(12)]
# Round 1 scores; the median of the exported pages is 5 in both rounds.
FIRST = [1, 2, 3, 5, 5, 5, 5, 5, 7, 8, 9]


def test_since_version_exports_changes_and_deletions(crawl, tmp_path):
    crawl.parse([parse_row(u) for u in U[:11]], segment="20260301000000")
    v1 = crawl.crawldb([crawldb_row(u, s / 100) for u, s in zip(U, FIRST)])

    # Round 2: the crawl grew, so every PageRank halves (boosts do not move), and:
    second = {u: s / 200 for u, s in zip(U, FIRST)}
    second[U[2]] = 7.2 / 200   # p2 gained links: boost sqrt(3/5) -> sqrt(7.2/5)
    second[U[9]] = 8.16 / 200  # p9 moved 2 %: boost moves 1 %, under export.min_change
    second[U[11]] = 9.5 / 200  # p11 is new
    rows = [crawldb_row(u, s) for u, s in second.items() if u != U[0]]
    rows.append(crawldb_row(U[0], second[U[0]], status="gone"))  # p0 is gone
    changed = {U[1]: "sig:p1 v2", U[3]: "sig:p3 v2"}  # p1 changed, p3 changed to noindex
    rows = [{**r, "signature": changed.get(r["url"], r["signature"])} for r in rows]
    crawl.parse([parse_row(U[1], signature=changed[U[1]], title="p1 v2"),
                 parse_row(U[3], signature=changed[U[3]], noindex=True), parse_row(U[11])],
                segment="20260302000000")
    v2 = crawl.crawldb(rows)

    out = tmp_path / "delta"
    counters = crawl.export(out=str(out), since_version=v1, export__format="elasticsearch")

    assert (counters["crawl_version"], counters["since_version"]) == (v2, v1)
    assert (counters["records"], counters["deletes"]) == (3, 2)
    lines = json_lines(str(out / "records"))
    docs = {doc["url"]: doc for doc in lines[1::2]}
    assert all(list(action) == ["index"] for action in lines[0::2])
    assert {u: round(d["boost"], 9) for u, d in docs.items()} == {
        U[1]: round(math.sqrt(2 / 5), 9), U[2]: 1.2, U[11]: round(math.sqrt(9.5 / 5), 9)}
    assert docs[U[1]]["title"] == "p1 v2"
    deletes = json_lines(str(out / "deletes"))
    assert sorted(deletes, key=str) == [{"delete": {"_index": "crawlkit", "_id": U[0]}},
                                        {"delete": {"_index": "crawlkit", "_id": U[3]}}]


def exported_urls(counters, part):
    """The document ids of an Elasticsearch increment's records or deletes."""
    lines = json_lines(f"{counters['out']}/{part}")
    actions = lines[0::2] if part == "records" else lines
    return sorted(next(iter(a.values()))["_id"] for a in actions)


def test_increments_compare_with_what_the_index_holds(crawl):
    """Chained increments, each against the export before it (the index): a boost that moves
    a little every round is sent once it has moved enough in total, and a page refetched with
    an unchanged signature (the text signature ignores meta tags) but a new title, a noindex
    or another canonical is updated, deleted or moved, though a rebuild of the older crawldb
    version with today's parse rows would look the same as now."""
    p = [f"http://p{i}.test/" for i in range(5)]
    moved = "http://p2.test/b"
    crawl.parse([parse_row(u) for u in p], segment="20260301000000")

    def round_(k, since):
        # the median stays 3; p4's score grows 7 % a round, its boost sqrt(1.07) = 3.4 %
        crawl.crawldb([crawldb_row(u, s) for u, s in zip(p, [1.0, 2.0, 3.0, 4.0, 5 * 1.07 ** k])])
        return crawl.export(since_version=since, export__format="elasticsearch")

    full = round_(0, None)
    second = round_(1, full["crawl_version"])
    # nothing moved enough: no files at all (Elasticsearch refuses an empty _bulk body)
    assert part_files(f"{second['out']}/records") == part_files(f"{second['out']}/deletes") == []
    assert (second["records"], second["deletes"], second["baseline"]) == (0, 0, full["out"])
    assert second["files"] == {"records": 0, "deletes": 0} and full["indexed"] == 5

    crawl.parse([parse_row(p[0], noindex=True), parse_row(p[1], title="p1 retitled"),
                 parse_row(p[2], canonical=moved)], segment="20260302000000")
    third = round_(2, second["crawl_version"])

    assert exported_urls(third, "records") == [p[1], moved, p[4]]
    assert exported_urls(third, "deletes") == [p[0], p[2]]
    assert third["baseline"] == second["out"] and third["since_version"] == second["crawl_version"]
    assert third["files"]["records"] >= 1 and third["indexed"] == 4
    docs = {d["url"]: d for d in json_lines(f"{third['out']}/records")[1::2]}
    assert docs[p[1]]["title"] == "p1 retitled"
    assert docs[p[4]]["boost"] == pytest.approx(math.sqrt(5 * 1.07 ** 2 / 3))


def test_without_an_earlier_export_the_older_version_is_rebuilt_from_its_segments(crawl, tmp_path):
    """No export of V has a state: V's records are rebuilt from the segments V had applied
    (updatedb:<segment> commits), so a later parse of the same content does not leak into it."""
    p = [f"http://p{i}.test/" for i in range(3)]
    crawl.parse([parse_row(u) for u in p], segment="20260301000000")
    v1 = crawl.crawldb([crawldb_row(u, s) for u, s in zip(p, [1.0, 2.0, 3.0])], tag="updatedb:20260301000000")
    crawl.parse([parse_row(p[0], noindex=True)], segment="20260302000000")  # same signature
    crawl.crawldb([crawldb_row(u, s) for u, s in zip(p, [1.0, 2.0, 3.0])], tag="updatedb:20260302000000")

    counters = crawl.export(out=str(tmp_path / "inc"), since_version=v1, export__format="elasticsearch")

    assert exported_urls(counters, "deletes") == [p[0]]
    assert (counters["baseline"], counters["records"], counters["deletes"]) == ("rebuilt", 0, 1)


def test_a_vacuumed_version_is_a_clear_error_before_anything_is_written(crawl, spark, tmp_path):
    p = [f"http://p{i}.test/" for i in range(2)]
    crawl.parse([parse_row(u) for u in p])
    v1 = crawl.crawldb([crawldb_row(u, 1.0) for u in p])
    crawl.crawldb([crawldb_row(u, 2.0) for u in p])
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        DeltaTable.forPath(spark, storage.crawldb_path(crawl.dir)).vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")

    with pytest.raises(SystemExit, match=f"crawldb version {v1} is no longer readable \\(vacuumed\\); "
                                         "run a full export"):
        cli_export(crawl.dir, "--since-version", str(v1), "--out", str(tmp_path / "vacuumed"))
    assert os.listdir(tmp_path) == ["crawl"] and not os.path.exists(f"{crawl.dir}/exports")


def test_since_export_reads_the_state_of_an_export_written_anywhere(crawl, tmp_path):
    p = [f"http://p{i}.test/" for i in range(3)]
    crawl.parse([parse_row(u) for u in p])
    crawl.crawldb([crawldb_row(u, s) for u, s in zip(p, [1.0, 2.0, 3.0])])
    loaded = str(tmp_path / "loaded")                    # not under <crawl>/exports
    crawl.export(out=loaded, export__format="elasticsearch")
    crawl.crawldb([crawldb_row(u, s) for u, s in zip(p[1:], [2.0, 3.0])])   # p0 left the crawl

    counters = crawl.export(out=str(tmp_path / "inc"), since_export=loaded, export__format="elasticsearch")
    assert (counters["baseline"], exported_urls(counters, "deletes")) == (loaded, [p[0]])

    with pytest.raises(SystemExit, match="not a complete export"):
        cli_export(crawl.dir, "--since-export", str(tmp_path), "--out", str(tmp_path / "x"))
    with pytest.raises(SystemExit, match="not both"):
        cli_export(crawl.dir, "--since-export", loaded, "--since-version", "0", "--out", str(tmp_path / "y"))
