"""inject's seeds file as operators give it: by URI, saved with a byte-order mark, missing;
and its counters under OPIC, whose virtual page is inserted beside the seeds."""
import pytest

from crawlkit.conf import ConfError, make_conf
from crawlkit.stages.inject import read_seed_file, run_inject


def test_a_seeds_file_is_read_by_path_or_by_uri_and_its_bom_dropped(spark, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttp://a.test/\r\nhttp://b.test/ score=2\n")
    expected = [b"http://a.test/", b"http://b.test/ score=2", b""]
    assert read_seed_file(spark, str(seeds)) == expected
    assert read_seed_file(spark, seeds.as_uri()) == expected          # file:///..., as hdfs://
    for missing in (str(tmp_path / "nope.txt"), (tmp_path / "nope.txt").as_uri()):
        with pytest.raises(ConfError, match="not found"):
            read_seed_file(spark, missing)


def test_inject_counts_seeds_not_the_virtual_page(spark, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nhttp://b.test/\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), scoring__scorer="opic")
    first = run_inject(spark, str(seeds), conf, __import__("datetime").datetime(2024, 1, 1))
    assert (first["seeds"], first["injected"], first["already_known"]) == (2, 2, 0)
    again = run_inject(spark, str(seeds), conf, __import__("datetime").datetime(2024, 1, 2))
    assert (again["injected"], again["already_known"]) == (0, 2)
    # under OPIC too, a known seed's metadata is merged, and no cash moves
    from crawlkit import storage
    cash = lambda: {r.url: r.opic_cash for r in storage.read_table(  # noqa: E731
        spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()}
    before = cash()
    seeds.write_text("http://a.test/ spam=true\nhttp://c.test/\n")
    updated = run_inject(spark, str(seeds), make_conf(crawl__dir=str(tmp_path / "crawl"), scoring__scorer="opic",
                                                      inject__update=True), __import__("datetime").datetime(2024, 1, 3))
    assert (updated["injected"], updated["updated"]) == (1, 1)
    after = cash()
    assert {u: after[u] for u in before} == {**before, "crawlkit:virtual": after["crawlkit:virtual"]}
    assert after["crawlkit:virtual"] + after["http://c.test/"] == pytest.approx(before["crawlkit:virtual"])


def test_known_urls_change_only_when_asked_update_merges_metadata_refetch_makes_them_due(spark, tmp_path):
    from datetime import datetime

    from crawlkit import storage
    from sparkhelpers import crawldb_rows

    now, later = datetime(2026, 3, 1), datetime(2026, 6, 1)
    crawl = tmp_path / "crawl"
    page = lambda n, status, **kw: {"url": f"http://a.test/{n}", "host": "a.test", "status": status,  # noqa: E731
                                    "fetch_time": later, "score": 0.5, **kw}
    crawldb_rows(spark, [
        page("farm", "fetched", metadata={"topic": "x"}),
        page("flagged", "fetched", metadata={"spam": "true", "topic": "y"}),
        page("down", "gone", retries=3),
        page("evicted", "evicted", metadata={"evicted_at": "2026-02-01T00:00:00Z"}),
        page("odd", "fetched", metadata={"empty": "", "none": None, "topic": "w"}),
    ], now).write.format("delta").save(storage.crawldb_path(str(crawl)))
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/farm spam=true score=9\n"
                     "http://a.test/flagged spam=\n"
                     "http://a.test/down\n"
                     "http://a.test/evicted\n"
                     "http://a.test/new spam= topic=z\n"
                     "http://a.test/farm topic=other\n"
                     "http://a.test/odd topic=w\n")

    def rows():
        db = storage.read_table(spark, storage.crawldb_path(str(crawl)), "crawldb")
        return {r.url.rsplit("/", 1)[1]: (r.status, r.fetch_time, r.retries, r.score, dict(r.metadata))
                for r in db.collect()}

    plain = run_inject(spark, str(seeds), make_conf(crawl__dir=str(crawl)), now)
    assert (plain["injected"], plain["already_known"], plain["updated"]) == (1, 5, 0)
    assert (plain["repeated_lines"], plain["repeats"]) == (1, ["line 6: the URL of line 1 again (line 1 kept)"])
    before = rows()
    assert before["farm"] == ("fetched", later, 0, 0.5, {"topic": "x"})
    assert before["new"][4] == {"topic": "z"}                  # an empty value is no key

    updated = run_inject(spark, str(seeds), make_conf(crawl__dir=str(crawl), inject__update=True), now)
    after = rows()
    assert updated["updated"] == 2                            # farm and flagged; the rest unchanged
    assert after["farm"] == ("fetched", later, 0, 0.5, {"topic": "x", "spam": "true"})  # no score
    assert after["flagged"][4] == {"topic": "y"}
    assert after["down"] == before["down"] and after["evicted"] == before["evicted"]
    assert after["odd"] == before["odd"]      # the row's own empty and null values are its own
    again = run_inject(spark, str(seeds), make_conf(crawl__dir=str(crawl), inject__update=True), now)
    assert again["updated"] == 0 and rows() == after

    refetched = run_inject(spark, str(seeds), make_conf(crawl__dir=str(crawl), inject__refetch=True), now)
    due = rows()
    assert refetched["updated"] == 5                          # farm, flagged, down, new, odd
    assert due["down"] == ("gone", now, 0, 0.5, {})            # due now, failures forgotten
    assert due["farm"][1:3] == (now, 0) and due["farm"][4] == after["farm"][4]
    assert due["evicted"] == before["evicted"]                # the buffer decides
