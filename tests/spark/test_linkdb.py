"""The append-only link table: the current view, the segment append, compaction."""
from datetime import datetime, timedelta

from chispa import assert_df_equality
from pyspark.sql import functions as F

from crawlkit import linkdb, schemas, storage

T1 = datetime(2026, 3, 1)
T2, T3 = T1 + timedelta(days=1), T1 + timedelta(days=2)
A, B, C = "http://a.test/", "http://b.test/", "http://c.test/"


def raw(spark, rows):
    """Link rows (src, dst, anchor, seen, commit_version) as the table stores them."""
    return schemas.conform(spark.createDataFrame(
        [{"src": s, "dst": d, "src_host": s.split("/")[2], "dst_host": d.split("/")[2] if d else "",
          "anchor": a, "meta": {}, "nofollow": False, "first_seen": seen, "last_seen": seen,
          "commit_version": v} for s, d, a, seen, v in rows], schemas.struct("links")), "links")


def view(df):
    return sorted((r.src, r.dst, r.anchor, r.first_seen, r.last_seen) for r in df.collect())


def test_current_keeps_each_pages_latest_version_and_its_links_first_sighting(spark):
    links = raw(spark, [
        (A, A + "x", "x", T1, 1), (A, A + "y", "y", T1, 1),      # a's first fetch
        (A, A + "y", "why", T3, 3),                               # refetched: y kept, x gone
        (B, B + "z", "z", T1, None),                              # before schema v2 (oldest)...
        (B, linkdb.NO_LINKS, None, T2, 2),                        # ...then refetched without links
        (C, C + "w", "w", T1, None)])                             # never refetched
    assert view(linkdb.current(links)) == [(A, A + "y", "why", T1, T3), (C, C + "w", "w", T1, T1)]


def _since_compaction(spark, path):
    """(rows appended since the last compaction, rows it kept), read from the table's history."""
    return linkdb.appended_since_compaction(storage.history(spark, path))


def test_append_stamps_the_version_marks_bare_pages_and_is_applied_once(spark, tmp_path):
    path = str(tmp_path / "linkdb")
    first = raw(spark, [(A, A + "x", "x", T1, None), (B, B + "z", "z", T1, None)])
    refreshed = spark.createDataFrame([(A,), (B,)], "src string")
    assert linkdb.append_segment(spark, path, first, refreshed, T1, "linkdb:s1") == \
        {"appended": 2, "pages_without_links": 0, "version": 1, "since_compaction": (0, 2)}
    # s2: a keeps one link, b now links nowhere (404), c was not refetched
    again = raw(spark, [(A, A + "x", "ex", T2, None)])
    refreshed = spark.createDataFrame([(A,), (B,)], "src string")
    assert linkdb.append_segment(spark, path, again, refreshed, T2, "linkdb:s2") == \
        {"appended": 1, "pages_without_links": 1, "version": 2, "since_compaction": (2, 2)}
    rerun = linkdb.append_segment(spark, path, again, refreshed, T2, "linkdb:s2")
    assert rerun["skipped"] == "already applied" and rerun["since_compaction"] == (2, 2)
    assert _since_compaction(spark, path) == (2, 2)   # what the appends said, from the table
    stored = storage.read_table(spark, path, "links")
    assert sorted((r.src, r.dst, r.commit_version) for r in stored.collect()) == sorted([
        (A, A + "x", 1), (A, A + "x", 2), (B, B + "z", 1), (B, linkdb.NO_LINKS, 2)])
    assert view(linkdb.current(stored)) == [(A, A + "x", "ex", T1, T2)]


def test_stored_rows_bound_the_current_links(spark, tmp_path):
    """Every stored row counts, superseded versions and markers too: a bound the scoring job
    gets without computing the current view (a shuffle of the table)."""
    path = str(tmp_path / "linkdb")
    assert linkdb.stored_rows(spark, path) == 0
    refreshed = spark.createDataFrame([(A,), (B,)], "src string")
    linkdb.append_segment(spark, path, raw(spark, [(A, A + "x", "x", T1, None), (B, B + "z", "z", T1, None),
                                                   (B, B + "y", "y", T1, None)]), refreshed, T1, "linkdb:s1")
    linkdb.append_segment(spark, path, raw(spark, [(A, A + "x", "ex", T2, None)]), refreshed, T2, "linkdb:s2")
    assert linkdb.stored_rows(spark, path) == 5                  # 3 + a's new version + b's marker
    assert linkdb.current(storage.read_table(spark, path, "links")).count() == 1


def test_compaction_drops_superseded_rows_and_changes_no_current_link(spark, tmp_path):
    path = str(tmp_path / "linkdb")
    pages = [f"http://h{i}.test/" for i in range(10)]
    load = raw(spark, [(p, p + str(j), "a", T1, None) for p in pages for j in range(4)])
    every = spark.createDataFrame([(p,) for p in pages], "src string")
    linkdb.append_segment(spark, path, load, every, T1, "linkdb:s1")
    assert _since_compaction(spark, path) == (0, 40)      # the first load is the base
    # s2 refetches two pages (one link each now): 2 rows appended, 6 superseded
    refetch = raw(spark, [(p, p + "new", "b", T2, None) for p in pages[:2]])
    linkdb.append_segment(spark, path, refetch, every.limit(2), T2, "linkdb:s2")
    assert _since_compaction(spark, path) == (2, 40)
    assert not linkdb.compaction_due((2, 40), 0.5)
    assert linkdb.compaction_due((2, 40), 0.05)
    assert not linkdb.compaction_due((2, 40), 0)
    assert not linkdb.compaction_due((0, 40), 0.05)
    before = linkdb.current(storage.read_table(spark, path, "links")).localCheckpoint(eager=True)

    assert linkdb.compact(spark, path, f"{linkdb.COMPACT_TAG}:s2")["kept"] == 34
    stored = storage.read_table(spark, path, "links")
    assert stored.count() == 34
    assert_df_equality(linkdb.current(stored).drop("meta"), before.drop("meta"),  # (maps do not sort)
                       ignore_row_order=True, ignore_nullable=True)
    assert _since_compaction(spark, path) == (0, 34)
    # the version before compaction is still readable (inspect's time travel)
    assert storage.read_table(spark, path, "links", 2).count() == 42


def test_a_table_written_before_commit_version_existed_takes_appends(spark, tmp_path):
    path = str(tmp_path / "linkdb")
    old = raw(spark, [(A, A + "x", "x", T1, None), (B, B + "z", "z", T1, None)]).drop("commit_version")
    old.write.format("delta").save(path)             # a schema v1 table: no commit_version
    refetch = raw(spark, [(A, A + "y", "y", T2, None)])
    linkdb.append_segment(spark, path, refetch, refetch.select("src"), T2, "linkdb:s2")
    links = linkdb.current(storage.read_table(spark, path, "links"))
    assert view(links) == [(A, A + "y", "y", T2, T2), (B, B + "z", "z", T1, T1)]
    assert links.filter(F.col("commit_version").isNull()).count() == 1
