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


def test_a_rerun_finds_its_append_behind_a_later_compaction_reading_back_to_its_lock(spark, tmp_path,
                                                                                    monkeypatch):
    """s1's links committed, then a crash before its crawldb commit; s2 applied and compacted
    the table; s1's rerun must still find its commit, while a new segment reads the history
    back to the compaction and its lock time only (windows of 1, 2, 4, ... commits here)."""
    path = str(tmp_path / "linkdb")
    windows = []

    def recent_history(*args, **kwargs):
        commits = read_recent(*args, **{**kwargs, "first": 1, "growth": 2})
        windows.append([c["version"] for c in commits])
        return commits
    read_recent = storage.recent_history
    monkeypatch.setattr(storage, "recent_history", recent_history)

    def append(rows, tag, locked_at=None):
        links = raw(spark, rows)
        return linkdb.append_segment(spark, path, links, links.select("src"), T1, tag, locked_at=locked_at)
    append([(A, A + "x", "x", T1, None)], "linkdb:s0")
    locked = storage.history(spark, path)[-1]["timestamp"]
    append([(B, B + "z", "z", T1, None)], "linkdb:s1", locked)
    append([(A, A + "y", "y", T2, None)], "linkdb:s2", locked)
    linkdb.compact(spark, path, f"{linkdb.COMPACT_TAG}:s2")  # version 4
    rerun = append([(B, B + "z", "z", T1, None)], "linkdb:s1", locked)
    assert rerun["skipped"] == "already applied" and windows[-1] == [1, 2, 3, 4]
    assert rerun["since_compaction"] == (0, 2)                # the compaction kept a->y and b->z
    assert storage.read_table(spark, path, "links").count() == 2
    # a segment locked well after every commit: the compaction alone answers
    later = storage.history(spark, path)[-1]["timestamp"] + 2 * linkdb.CLOCK_MARGIN
    assert append([(C, C + "w", "w", T2, None)], "linkdb:s3", later)["version"] == 5
    assert windows[-1] == [4]
    # ... and then the last append alone, which carries (rows appended since the compaction, kept)
    assert append([(C, C + "v", "v", T2, None)], "linkdb:s4", later)["since_compaction"] == (2, 2)
    assert windows[-1] == [5]
    assert _since_compaction(spark, path) == (2, 2)


def test_since_compaction_from_the_pair_an_append_carries(spark):
    def commit(tag, rows, carried=None, operation="WRITE"):
        tags = tag if carried is None else linkdb.carrying(tag, carried)
        return {"operation": operation, "userMetadata": tags, "operationMetrics": {"numOutputRows": str(rows)}}
    load, second, third = commit("linkdb:s1", 2, (0, 0)), commit("linkdb:s2", 1, (0, 2)), commit("linkdb:s3", 3, (1, 2))
    assert linkdb.appended_since_compaction([load, second, third]) == (4, 2)
    assert linkdb.appended_since_compaction([third]) == (4, 2)          # the newest append alone
    assert linkdb.appended_since_compaction([second, third]) == (4, 2)
    assert linkdb.appended_since_compaction([load]) == (0, 2)           # the first load is the base
    assert linkdb.appended_since_compaction([commit("linkdb:s0", 0, (0, 0)), load]) == (0, 2)
    compaction = commit(f"{linkdb.COMPACT_TAG}:s3", 5, operation="WRITE")
    assert linkdb.appended_since_compaction([load, second, third, compaction]) == (0, 5)
    assert linkdb.appended_since_compaction([compaction, commit("linkdb:s4", 2, (0, 5))]) == (2, 5)
    # tables written before appends carried the pair: back to the compaction or the first load
    assert linkdb.appended_since_compaction([commit("linkdb:s1", 2), commit("linkdb:s2", 1)]) == (1, 2)


def test_the_links_history_is_read_back_to_a_compaction_and_the_lock_time(spark, tmp_path):
    def commit(version, tag, at):
        return {"version": version, "timestamp": at, "operation": "WRITE", "userMetadata": tag,
                "operationMetrics": {"numOutputRows": "1"}}
    lock = datetime(2026, 3, 2, 12)
    compaction = commit(7, f"{linkdb.COMPACT_TAG}:s6", lock - timedelta(hours=3))
    old = commit(8, "linkdb:s7", lock - timedelta(hours=2))
    recent = commit(9, "linkdb:s8", lock - timedelta(minutes=30))   # within the clock margin
    not_before = lock - linkdb.CLOCK_MARGIN
    # a compaction and a commit older than the bound: s9's commit, if any, would be in the window
    assert linkdb.history_answers([compaction, old, recent], "linkdb:s9", not_before)
    assert linkdb.history_answers([old, recent], "linkdb:s9", not_before) is False   # no compaction yet
    assert linkdb.history_answers([compaction, old, recent], "linkdb:s9", None) is False  # no bound
    # the window does not yet reach past the bound: a commit within the margin may be older
    assert not linkdb.history_answers([dict(compaction, timestamp=lock - timedelta(minutes=40)), recent],
                                      "linkdb:s9", not_before)
    assert linkdb.history_answers([compaction, recent], "linkdb:s8", None)          # the tag found
