"""Which pages are exported, under which URL, with which title: one export over a crawldb
holding one page of each kind."""
import math

from exporthelpers import crawldb_row, parse_row

from crawlkit import schemas

OLD, NEW = "20260301000000", "20260302000000"


def test_one_record_per_indexable_page_under_its_canonical_url(crawl, spark, tmp_path):
    u = lambda name: f"http://site.test/{name}"  # noqa: E731
    www, evil = "http://www.site.test/", "http://evil.test/p"
    crawl.crawldb([
        crawldb_row(u("a"), 0.4, scores={"pagerank": 0.4, "broken": float("nan")}),  # exported
        crawldb_row(u("b"), 0.3, status="not_modified"),       # exported with the title of OLD
        crawldb_row(u("gone"), 0.3, status="gone"),            # 404 since
        crawldb_row(u("dup"), 0.3, status="duplicate"),        # same content as a better page
        crawldb_row(u("redir"), 0.3, status="redirect_perm"),  # nothing to index
        crawldb_row(u("new"), 0.3, status="unfetched", signature=None),
        crawldb_row(u("hidden"), 0.3),                         # meta robots noindex
        crawldb_row(u("unparsed"), 0.3),                       # no parse row at all
        crawldb_row(u("failed"), 0.3),                         # its parse failed
        crawldb_row(u("variant"), 0.9),                        # canonical -> a: a (self) wins
        crawldb_row(u("i"), 0.1),                              # canonical -> canon, lower score
        crawldb_row(u("j"), 0.2),                              # canonical -> canon, wins
        crawldb_row(www, 0.25, domain="site.test"),            # canonical -> site.test: one site
        crawldb_row(evil, 0.15, domain="evil.test"),           # canonical -> bank.test: not its to say
        crawldb_row("crawlkit:virtual", 5.0),                  # OPIC's virtual page
    ])
    crawl.parse([parse_row(u("a"), title="A"), parse_row(u("b"), title="B as applied"),
                 parse_row(u("hidden"), noindex=True), parse_row(u("failed"), parse_status="failed"),
                 parse_row(u("variant"), canonical=u("a")), parse_row(u("i"), canonical=u("canon"), title="I"),
                 parse_row(u("j"), canonical=u("canon"), title="J"), parse_row(u("gone")),
                 parse_row(www, canonical=u("home"), title="W"),
                 parse_row(evil, canonical="https://bank.test/login", title="Log in to your bank")], segment=OLD)
    # b was refetched and parsed again in NEW, but updatedb has not applied NEW: the crawldb
    # still holds the OLD signature, so the OLD title goes with it.
    crawl.parse([parse_row(u("b"), title="B unapplied", signature="sig:changed")], segment=NEW)

    counters = crawl.export(out=str(tmp_path / "out"), export__boost="raw")

    got = spark.read.parquet(str(tmp_path / "out" / "records"))
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in schemas.struct("boosts")]
    rows = {r.url: r.asDict() for r in got.collect()}
    assert rows == {
        u("a"): dict(url=u("a"), source_url=u("a"), title="A", digest=f"sig:{u('a')}", boost=0.4,
                     score=0.4, components={"pagerank": 0.4}, crawl_version=1),
        u("b"): dict(url=u("b"), source_url=u("b"), title="B as applied", digest=f"sig:{u('b')}",
                     boost=0.3, score=0.3, components={"pagerank": 0.3}, crawl_version=1),
        u("canon"): dict(url=u("canon"), source_url=u("j"), title="J", digest=f"sig:{u('j')}",
                         boost=0.2, score=0.2, components={"pagerank": 0.2}, crawl_version=1),
        u("home"): dict(url=u("home"), source_url=www, title="W", digest=f"sig:{www}",
                        boost=0.25, score=0.25, components={"pagerank": 0.25}, crawl_version=1),
        evil: dict(url=evil, source_url=evil, title="Log in to your bank", digest=f"sig:{evil}",
                   boost=0.15, score=0.15, components={"pagerank": 0.15}, crawl_version=1),
    }
    assert counters["records"] == 5 and counters["crawl_version"] == 1
    assert counters["skipped"] == {"no_parse": 2, "noindex": 1, "same_canonical": 2}
    assert not any(math.isnan(v) for r in rows.values() for v in r["components"].values())
