"""updatedb: the transition table applied by Spark, schedules, new URLs and link replacement."""
from datetime import datetime, timedelta

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from crawlkit import linkdb, schemas, storage
from crawlkit.conf import make_conf
from crawlkit.stages.transition import outcomes, updated_entries
from crawlkit.stages.updatedb import run_updatedb, with_domain
from crawlkit.status import FetchStatus, Schedule, Status, transition

from sparkhelpers import crawldb_rows

NOW = datetime(2026, 3, 1, 12, 0, 0)
DAY = 86400


def content_rows(spark, rows, segment="s1"):
    full = []
    for r in rows:
        base = dict(host=r["url"].split("/")[2], http_status=None, fetched_at=NOW, elapsed_ms=5,
                    content_type="text/html", headers={}, content=None, truncated=False,
                    redirect_url=None, retry_after=None, error=None, segment=segment)
        base.update(r)
        full.append(base)
    return spark.createDataFrame(full, schemas.struct("content"))


def parse_rows(spark, rows, segment="s1"):
    full = []
    for r in rows:
        base = dict(parse_status="success", title="t", text="x", signature=None, outlinks=[],
                    noindex=False, nofollow=False, canonical=None, lang=None, error=None, segment=segment)
        base.update(r)
        full.append(base)
    return spark.createDataFrame(full, schemas.struct("parse"))


OLD = [Status.UNFETCHED, Status.FETCHED, Status.RETRY]


def test_spark_updatedb_follows_the_transition_table(spark):
    """Every (old status, retries, outcome) cell in one Spark job: status, retries and next
    fetch time agree with crawlkit.status.transition and the schedule it names."""
    conf = make_conf(db__retry_max=2, schedule__default_interval=30 * DAY)
    cells = [(old, retries, outcome) for old in OLD for retries in (0, 2) for outcome in FetchStatus]
    db = crawldb_rows(spark, [{"url": f"http://h{i}.test/", "host": f"h{i}.test", "status": old.value,
                               "retries": retries} for i, (old, retries, _) in enumerate(cells)], NOW)
    content = content_rows(spark, [{"url": f"http://h{i}.test/", "fetch_status": outcome.value,
                                    "retry_after": 120 if outcome is FetchStatus.RETRY else None}
                                   for i, (_, _, outcome) in enumerate(cells)])
    got = {r.url: r for r in updated_entries(db, outcomes(content, parse_rows(spark, [])), conf, NOW).collect()}
    assert len(got) == len(cells)
    for i, (old, retries, outcome) in enumerate(cells):
        status, schedule, new_retries = transition(old, outcome, retries, 2)
        row = got[f"http://h{i}.test/"]
        assert (row.status, row.retries) == (status.value, new_retries), (old, retries, outcome)
        wait = {Schedule.NORMAL: 30 * DAY, Schedule.GONE: conf["db.gone_recheck_interval"],
                Schedule.RETRY: 120 if outcome is FetchStatus.RETRY else conf["db.retry_interval"]}[schedule]
        assert row.fetch_time == NOW + timedelta(seconds=wait), (old, retries, outcome)
        assert row.generated_segment is None


def test_unchanged_signature_counts_as_not_modified_and_adaptive_interval_grows(spark):
    conf = make_conf(schedule__kind="adaptive", schedule__inc_rate=0.5, schedule__dec_rate=0.5)
    db = crawldb_rows(spark, [
        {"url": "http://a.test/same", "host": "a.test", "status": "fetched", "signature": "S1", "fetch_interval": 1000},
        {"url": "http://a.test/new", "host": "a.test", "status": "fetched", "signature": "S1", "fetch_interval": 1000},
        {"url": "http://a.test/304", "host": "a.test", "status": "fetched", "signature": "S1", "fetch_interval": 1000,
         "etag": "e1"},
        {"url": "http://a.test/304-new-etag", "host": "a.test", "status": "fetched", "signature": "S1",
         "fetch_interval": 1000, "etag": "e1", "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT"},
    ], NOW)
    content = content_rows(spark, [
        {"url": "http://a.test/same", "fetch_status": "success", "headers": {"etag": "e2"}},
        {"url": "http://a.test/new", "fetch_status": "success"},
        {"url": "http://a.test/304", "fetch_status": "not_modified"},
        {"url": "http://a.test/304-new-etag", "fetch_status": "not_modified", "headers": {"etag": "e3"}},
    ])
    parsed = parse_rows(spark, [{"url": "http://a.test/same", "signature": "S1"},
                                {"url": "http://a.test/new", "signature": "S2"}])
    got = {r.url: r for r in updated_entries(db, outcomes(content, parsed), conf, NOW).collect()}
    assert (got["http://a.test/same"].status, got["http://a.test/same"].fetch_interval) == ("not_modified", 3600)
    assert got["http://a.test/same"].etag == "e2"
    assert (got["http://a.test/new"].status, got["http://a.test/new"].fetch_interval) == ("fetched", 3600)
    assert got["http://a.test/new"].change_count == 1 and got["http://a.test/new"].modified_time == NOW
    assert got["http://a.test/304"].status == "not_modified" and got["http://a.test/304"].etag == "e1"
    # a 304 sends the current ETag: it replaces the stored one; the Last-Modified it did not send stays
    moved = got["http://a.test/304-new-etag"]
    assert (moved.etag, moved.last_modified) == ("e3", "Mon, 01 Jan 2024 00:00:00 GMT")
    assert got["http://a.test/304"].fetch_interval == 3600  # 1000 * 1.5 clamped up to min_interval
    assert got["http://a.test/same"].check_count == 1 and got["http://a.test/same"].change_count == 0


def _write_segment(spark, crawl_dir, segment, content, parsed):
    storage.write_segment_part(content, crawl_dir, segment, "content", "content")
    storage.write_segment_part(parsed, crawl_dir, segment, "parse", "parse")


def test_a_page_reached_through_inline_redirects_gets_its_redirect_link_once(spark, tmp_path):
    # a parse that kept the page's link to its final URL (self-links kept, or a segment
    # parsed before parse dropped them): that link and the redirect link are one (src, dst)
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir)
    table = storage.ensure_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    seed = crawldb_rows(spark, [{"url": "http://a.test/dir", "host": "a.test", "depth": 0}], NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    link = lambda url: {"url": url, "anchor": "a", "nofollow": False, "meta": {"kind": "a"}}
    _write_segment(spark, crawl_dir, "s1",
                   content_rows(spark, [{"url": "http://a.test/dir", "fetch_status": "success",
                                         "redirect_url": "http://a.test/dir/"}]),
                   parse_rows(spark, [{"url": "http://a.test/dir", "outlinks": [
                       link("http://a.test/dir/"), link("http://a.test/dir/x")]}]))
    assert run_updatedb(spark, conf, NOW, "s1")["links"] == 2
    links = sorted((r.src, r.dst, dict(r.meta)["kind"]) for r in linkdb.read_current(spark, crawl_dir).collect())
    assert links == [("http://a.test/dir", "http://a.test/dir/", "redirect"),
                     ("http://a.test/dir", "http://a.test/dir/x", "a")]


def test_each_new_row_gets_the_registrable_domain_of_its_own_host(spark):
    # one Arrow batch per row and two partitions: hosts repeated across partitions, and a
    # batch whose only host is missing (an untyped all-null batch once broke the stage)
    hosts = ["a.b.example.co.uk", "www.example.com", None, "a.b.example.co.uk", "10.1.2.3", "www.example.com"]
    df = spark.createDataFrame([(f"u{i}", h) for i, h in enumerate(hosts)], "url string, host string").repartition(2)
    with storage.session_setting(spark, "spark.sql.execution.arrow.maxRecordsPerBatch", "1"):
        got = {r.url: (r.host, r.domain) for r in with_domain(df).collect()}
    assert got == {"u0": ("a.b.example.co.uk", "example.co.uk"), "u1": ("www.example.com", "example.com"),
                   "u2": (None, None), "u3": ("a.b.example.co.uk", "example.co.uk"),
                   "u4": ("10.1.2.3", "10.1.2.3"), "u5": ("www.example.com", "example.com")}


def test_the_host_column_of_new_urls_is_the_one_inject_gives(spark):
    # host_expr (Spark, for discovered URLs) and urls.host_of (inject, Python) must agree, or
    # one host counts as two for the per-host caps and the fetch partitions
    from crawlkit.stages.updatedb import host_expr
    from crawlkit.urls import host_of, normalize
    urls = [normalize(u) for u in (
        "http://www.example.com/a", "https://user:pw@example.com:8443/x?y", "http://10.1.2.3/",
        "http://[::1]:8080/", "http://[2001:db8::1]/p", "http://example.com?q=1",
        "http://xn--bcher-kva.de/#f")]
    got = spark.createDataFrame([(u,) for u in urls], "url string").select("url", host_expr("url"))
    assert {r[0]: r[1] for r in got.collect()} == {u: host_of(u) for u in urls}


def test_run_updatedb_adds_new_urls_replaces_links_and_is_idempotent(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir, db__max_outlinks_per_page=2)
    path = storage.crawldb_path(crawl_dir)
    table = storage.ensure_table(spark, path, "crawldb")
    seed = crawldb_rows(spark, [{"url": "http://a.test/", "host": "a.test", "depth": 0},
                                {"url": "http://b.test/", "host": "b.test", "depth": 0}], NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    link = lambda url, anchor, nofollow=False: {"url": url, "anchor": anchor, "nofollow": nofollow, "meta": {}}
    _write_segment(spark, crawl_dir, "s1",
                   content_rows(spark, [{"url": "http://a.test/", "fetch_status": "success"},
                                        {"url": "http://b.test/", "fetch_status": "redirect_perm",
                                         "redirect_url": "http://b.test/home"}]),
                   parse_rows(spark, [{"url": "http://a.test/", "signature": "A", "outlinks": [
                       link("http://a.test/x", "x"), link("http://c.test/", "c", nofollow=True),
                       link("http://a.test/y", "y"), link("http://a.test/z", "z (over the cap)")]}]))
    counters = run_updatedb(spark, conf, NOW, "s1")
    assert (counters["by_status"], counters["new_urls"], counters["links"]) == (
        {"fetched": 1, "redirect_perm": 1}, 2, 2)
    rows = {r.url: r for r in storage.read_table(spark, path, "crawldb").collect()}
    assert set(rows) == {"http://a.test/", "http://b.test/", "http://a.test/x", "http://b.test/home"}
    assert rows["http://a.test/x"].status == "unfetched" and rows["http://a.test/x"].depth == 1
    assert rows["http://a.test/x"].domain == "a.test"
    assert rows["http://b.test/"].status == "redirect_perm"
    links = {(r.src, r.dst, r.anchor) for r in linkdb.read_current(spark, crawl_dir).collect()}
    assert links == {("http://a.test/", "http://a.test/x", "x"), ("http://b.test/", "http://b.test/home", None)}
    version = storage.table_version(spark, path)
    assert run_updatedb(spark, conf, NOW, "s1") == {"segment": "s1", "skipped": "already applied"}
    assert storage.table_version(spark, path) == version

    # a refetch of a.test/ finds y and x again (x keeps its first sighting); b.test/ is now a
    # 404, so its redirect link goes
    later = NOW + timedelta(days=1)
    _write_segment(spark, crawl_dir, "s2",
                   content_rows(spark, [{"url": "http://a.test/", "fetch_status": "success"},
                                        {"url": "http://b.test/", "fetch_status": "not_found"}], "s2"),
                   parse_rows(spark, [{"url": "http://a.test/", "signature": "A2", "outlinks": [
                       link("http://a.test/y", "why"), link("http://a.test/x", "ex")]}], "s2"))
    counters = run_updatedb(spark, conf, later, "s2")
    assert counters["link_changes"] == {"appended": 2, "pages_without_links": 1, "version": 2,
                                        "since_compaction": (3, 2)}
    # 3 rows appended on a table first loaded with 2: past db.links_compact_ratio (0.5), so
    # updatedb compacted it to the 2 current links (s1's and the marker are gone)
    assert counters["link_compaction"]["kept"] == 2
    assert storage.read_table(spark, storage.linkdb_path(crawl_dir), "links").count() == 2
    links = {(r.src, r.dst): (r.anchor, r.first_seen, r.last_seen) for r in linkdb.read_current(spark, crawl_dir).collect()}
    assert links == {("http://a.test/", "http://a.test/y"): ("why", later, later),
                     ("http://a.test/", "http://a.test/x"): ("ex", NOW, later)}


def test_an_abandoned_segment_is_refused_and_the_crawldb_stays_as_it_was(spark, tmp_path):
    from crawlkit.resume import SegmentStateError
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir)
    path = storage.crawldb_path(crawl_dir)
    table = storage.ensure_table(spark, path, "crawldb")
    seed = crawldb_rows(spark, [{"url": "http://a.test/", "host": "a.test", "depth": 0}], NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    _write_segment(spark, crawl_dir, "s1",
                   content_rows(spark, [{"url": "http://a.test/", "fetch_status": "success"}]),
                   parse_rows(spark, [{"url": "http://a.test/", "signature": "A", "outlinks": []}]))
    storage.write_stats(spark, crawl_dir, "s1", "abandoned", {"segment": "s1"})
    version = storage.table_version(spark, path)
    with pytest.raises(SegmentStateError, match="abandoned"):
        run_updatedb(spark, conf, NOW, "s1")
    assert storage.table_version(spark, path) == version


def _sortable(df):
    """Map columns as sorted arrays of entries (Spark cannot sort rows by a map)."""
    return df.select([F.array_sort(F.map_entries(c)).alias(c) if t.startswith("map") else F.col(c)
                      for c, t in df.dtypes])


@pytest.mark.parametrize("locks", ["none, and a stray URL", "all", "all, without deletion vectors",
                                   "one taken by a later segment"])
def test_the_commit_writes_what_the_select_of_updated_entries_and_new_urls_gives(spark, tmp_path, locks):
    """run_updatedb applies ``transitioned_columns`` in its one crawldb commit (an overwrite of the
    locked rows, or a MERGE); the crawldb it leaves equals the old rows not in the segment, plus
    ``updated_entries`` (a join and a select) and ``new_urls`` (probes of the crawldb)
    computed from the crawldb before. Outcomes cover every transition with metadata, a
    signature, a redirect and a retry past the maximum; links go to segment URLs, known URLs
    and new ones, from sources at different depths. ``locks``: generate's lock on the
    segment's rows, which lets updatedb read only the segment's files when it holds for
    every row (``all``); else it reads the whole crawldb: rows never locked and a segment
    URL not in the crawldb (as a segment of hand-made rows), or one lock taken over by a
    later segment after it expired (that URL is the later segment's now: its outcome and
    links are left out, ``superseded``, and its row stays as it was, still locked).
    Without deletion vectors the locked rows share files with others, which the overwrite of
    the locked rows must copy."""
    from chispa import assert_df_equality

    from crawlkit.stages.updatedb import new_urls, segment_links
    crawl_dir = str(tmp_path / "crawl")
    vectors = not locks.endswith("without deletion vectors")
    conf = make_conf(crawl__dir=crawl_dir, db__retry_max=1, db__deletion_vectors=vectors)
    path = storage.crawldb_path(crawl_dir)
    table = storage.ensure_table(spark, path, "crawldb", deletion_vectors=vectors)
    lock = {"none, and a stray URL": lambda i: None, "all": lambda i: "s1",
            "all, without deletion vectors": lambda i: "s1" if i < 6 else None,
            "one taken by a later segment": lambda i: "s2" if i == 3 else "s1"}[locks]
    old = [{"url": f"http://h{i}.test/", "host": f"h{i}.test", "status": status, "retries": retries,
            "depth": i % 3, "signature": "S" if i % 2 else None, "etag": "e-old",
            "metadata": {"last_error": "boom", "keep": "me"} if i % 4 == 0 else {},
            "generated_segment": lock(i), "generate_time": NOW if lock(i) else None}
           for i, (status, retries) in enumerate([(s.value, r) for s in OLD for r in (0, 1)])]
    old.append({"url": "http://other.test/known", "host": "other.test", "depth": 5})
    seed = crawldb_rows(spark, old, NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    before = storage.read_table(spark, path, "crawldb").localCheckpoint()

    link = lambda url: {"url": url, "anchor": url[-1], "nofollow": False, "meta": {}}  # noqa: E731
    stray = locks.endswith("stray URL")
    stray_content = [{"url": "http://stray.test/", "fetch_status": "success"}] if stray else []
    stray_parse = [{"url": "http://stray.test/", "signature": "U",
                    "outlinks": [link("http://new.test/d")]}] if stray else []
    statuses = [FetchStatus.SUCCESS, FetchStatus.NOT_FOUND, FetchStatus.RETRY, FetchStatus.REDIRECT_PERM,
                FetchStatus.SUCCESS, FetchStatus.RETRY]
    content = content_rows(spark, [
        {"url": f"http://h{i}.test/", "fetch_status": fs.value, "http_status": 200,
         "headers": {"etag": f"e{i}", "last-modified": "yesterday"},
         "redirect_url": "http://h9.test/moved" if fs is FetchStatus.REDIRECT_PERM else None,
         "retry_after": 60 if fs is FetchStatus.RETRY else None,
         "error": "refused" if fs is FetchStatus.RETRY else None}
        for i, fs in enumerate(statuses)] + stray_content)
    parsed = parse_rows(spark, [
        {"url": "http://h0.test/", "signature": "S", "outlinks": [
            link("http://h1.test/"), link("http://other.test/known"), link("http://new.test/a"),
            link("http://new.test/b")]},
        {"url": "http://h4.test/", "signature": "T", "outlinks": [link("http://new.test/a"), link("http://new.test/c")]},
        *stray_parse])
    _write_segment(spark, crawl_dir, "s1", content, parsed)

    taken = ["http://h3.test/"] if locks == "one taken by a later segment" else []
    ours = spark.createDataFrame([(u,) for u in taken], "url string")
    applied, applied_parse = (df.join(ours, on="url", how="left_anti") for df in (content, parsed))
    expected_updates = updated_entries(before, outcomes(applied, applied_parse), conf, NOW)
    expected_new = new_urls(segment_links(applied, applied_parse, conf, NOW), before, conf, NOW)
    untouched = before.join(expected_updates.select("url"), on="url", how="left_anti")
    expected = schemas.conform(untouched.unionByName(expected_updates).unionByName(expected_new), "crawldb")

    version = storage.table_version(spark, path)
    counters = run_updatedb(spark, conf, NOW, "s1")
    got = storage.read_table(spark, path, "crawldb")
    assert_df_equality(_sortable(got), _sortable(expected), ignore_row_order=True, ignore_nullable=True)
    # one commit applies the segment (a crash before it leaves the crawldb as it was): while the
    # lock holds every row, an overwrite of the locked rows; else a MERGE
    commits = DeltaTable.forPath(spark, path).history().filter(f"version > {version}").collect()
    assert [(c.operation, c.userMetadata) for c in commits] == \
        [("WRITE" if locks.startswith("all") else "MERGE", "updatedb:s1")]
    if not vectors:   # the unlocked rows of the lock's files were copied, none lost (equality above)
        assert int(commits[0].operationMetrics["numCopiedRows"]) > 0
    # moved (h3's redirect, unless h3 is taken), a, b, c (, d)
    assert counters["new_urls"] == expected_new.count() == 4 + stray - len(taken)
    assert counters["superseded"] == len(taken)
    assert counters["by_status"] == {r["status"]: r["count"] for r in
                                     expected_updates.groupBy("status").count().collect()}
    assert {r.url: r.depth for r in expected_new.collect()}["http://new.test/a"] == 1


def test_updatedb_opens_only_the_files_generate_wrote_the_segment_to(spark, tmp_path):
    """Generate's lock MERGE writes the segment's rows to new files (deletion vectors mark
    the old copies). updatedb finds them by ``generated_segment``, so Delta's data skipping
    keeps it away from every other file of the crawldb: here those files are moved away
    while it runs, and the update is complete all the same. (The segment's pages have no
    outlinks: finding out that a link target is new must read the url_hash column of every file.)"""
    import glob
    import shutil

    from crawlkit.stages.generate import run_generate
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir, crawl__topN=3, generate__policy="score")
    path = storage.crawldb_path(crawl_dir)
    storage.ensure_table(spark, path, "crawldb")
    seed = crawldb_rows(spark, [{"url": f"http://h{i}.test/", "host": f"h{i}.test", "score": float(i)}
                                for i in range(12)], NOW)
    seed.write.format("delta").mode("append").save(path)
    before_generate = set(glob.glob(f"{path}/*.parquet"))
    assert run_generate(spark, conf, NOW, "s1")["generated"] == 3
    fetched = [r.url for r in storage.read_segment_part(spark, crawl_dir, "s1", "fetchlist", "fetchlist").collect()]
    _write_segment(spark, crawl_dir, "s1",
                   content_rows(spark, [{"url": u, "fetch_status": "success"} for u in fetched]),
                   parse_rows(spark, [{"url": u, "signature": "S"} for u in fetched]))

    aside = tmp_path / "aside"
    aside.mkdir()
    for name in before_generate:
        shutil.move(name, aside)
    try:
        counters = run_updatedb(spark, conf, NOW, "s1")
    finally:
        for name in glob.glob(f"{aside}/*"):
            shutil.move(name, path)
    assert counters["by_status"] == {"fetched": 3}
    rows = {r.url: (r.status, r.generated_segment) for r in storage.read_table(spark, path, "crawldb").collect()}
    assert set(fetched) == {"http://h9.test/", "http://h10.test/", "http://h11.test/"}   # the best scores
    assert {u for u, (status, _) in rows.items() if status == "fetched"} == set(fetched)
    assert all(lock is None for _, lock in rows.values()) and len(rows) == 12


def test_finding_the_new_link_targets_shuffles_neither_the_crawldb_nor_the_targets(spark):
    """Within ``db.broadcast_rows``, the URL-column probe and the join that drops the known
    targets are broadcast hash joins: the crawldb is scanned once and never shuffled, and
    the targets (up to 5x10^5 links' worth) are not shuffled to meet what the probe found."""
    from crawlkit.stages.updatedb import _unknown
    # checkpointed: no size estimates, as for a big table, so Spark broadcasts only on a hint
    crawldb = crawldb_rows(spark, [{"url": f"http://h{i}.test/", "host": f"h{i}.test"}
                                   for i in range(4)], NOW).localCheckpoint()
    targets = spark.createDataFrame([("http://h1.test/", 1), ("http://new.test/", 2)],
                                    "url string, depth int").localCheckpoint()
    unknown = _unknown(targets, crawldb, rows=2, bound=10)
    plan = unknown._jdf.queryExecution().executedPlan().toString()
    assert "Exchange hashpartitioning" not in plan and "SortMergeJoin" not in plan, plan
    assert plan.count("BroadcastHashJoin") == 2, plan
    assert [(r.url, r.depth) for r in unknown.collect()] == [("http://new.test/", 2)]
    # above the bound the joins shuffle (the same answer)
    assert [r.url for r in _unknown(targets, crawldb, rows=2, bound=1).collect()] == ["http://new.test/"]


def test_a_segment_applied_late_does_not_overwrite_a_later_fetch(spark, tmp_path):
    from crawlkit.stages.generate import run_generate
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir, generate__lock_timeout=DAY, generate__partitions=1)
    table = storage.ensure_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    pages = ["http://a.test/", "http://b.test/"]
    seed = crawldb_rows(spark, [{"url": u, "host": u.split("/")[2], "depth": 0} for u in pages], NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    link = {"url": "http://c.test/", "anchor": "c", "nofollow": False, "meta": {}}

    def fetched(segment, at, signature, outlinks):
        _write_segment(spark, crawl_dir, segment,
                       content_rows(spark, [{"url": u, "fetch_status": "success", "fetched_at": at}
                                            for u in pages], segment),
                       parse_rows(spark, [{"url": u, "signature": signature, "outlinks": outlinks}
                                          for u in pages], segment))

    late = run_generate(spark, conf, NOW)["segment"]
    later = NOW + timedelta(days=2)
    newer = run_generate(spark, conf, later)["segment"]   # the first lock expired: taken again
    fetched(newer, later, "new", [link])
    run_updatedb(spark, conf, later, newer)
    # the first segment's fetch, two days older, is applied only now
    fetched(late, NOW + timedelta(hours=1), "old", [])
    counters = run_updatedb(spark, conf, later + timedelta(hours=1), late)
    assert (counters["superseded"], counters["by_status"], counters["links"]) == (2, {}, 0)
    rows = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()
    assert {(r.url, r.signature, r.fetched_at) for r in rows if r.url in pages} == {
        (u, "new", later) for u in pages}
    # the late pages' (empty) links did not hide the newer fetch's
    assert {(r.src, r.dst) for r in linkdb.read_current(spark, crawl_dir).collect()} == {
        (u, "http://c.test/") for u in pages}


def test_a_page_denied_blocked_or_no_longer_html_loses_its_old_links(spark, tmp_path):
    crawl_dir = str(tmp_path / "crawl")
    conf = make_conf(crawl__dir=crawl_dir)
    table = storage.ensure_table(spark, storage.crawldb_path(crawl_dir), "crawldb")
    pages = {"http://a.test/": "robots_denied", "http://b.test/": "blocked",
             "http://c.test/": "unsupported_type", "http://d.test/": "retry"}
    seed = crawldb_rows(spark, [{"url": u, "host": u.split("/")[2], "depth": 0} for u in pages], NOW)
    table.alias("d").merge(seed.alias("s"), "d.url = s.url").whenNotMatchedInsertAll().execute()
    link = {"url": "http://x.test/", "anchor": "x", "nofollow": False, "meta": {}}
    _write_segment(spark, crawl_dir, "s1",
                   content_rows(spark, [{"url": u, "fetch_status": "success"} for u in pages]),
                   parse_rows(spark, [{"url": u, "signature": "1", "outlinks": [link]} for u in pages]))
    run_updatedb(spark, conf, NOW, "s1")
    _write_segment(spark, crawl_dir, "s2",
                   content_rows(spark, [{"url": u, "fetch_status": st} for u, st in pages.items()], "s2"),
                   parse_rows(spark, [], "s2"))
    run_updatedb(spark, conf, NOW + timedelta(days=1), "s2")
    # only the transient failure keeps what the page linked to
    assert {r.src for r in linkdb.read_current(spark, crawl_dir).collect()} == {"http://d.test/"}
