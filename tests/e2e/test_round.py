"""Three real rounds over a generated web of 200 pages on 5 hosts, through the replay web.

Real HTTP over loopback, real Delta tables, a real Spark session: what the crawler wrote is
checked against what the replay web served (its access log and its ground truth).
"""
from datetime import datetime, timedelta
from itertools import count

import pytest

from crawlkit import linkdb, storage
from crawlkit.crawl import run_crawl
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)
from crawlkit.stages.generate import generate

NOW = datetime(2026, 2, 1, 0, 0, 0)
DELAY = 0.3
TRAPS = {
    "http://s2.gen.test/__trap/status/404": ("gone", 404),
    "http://s2.gen.test/__trap/status/500": ("retry", 500),
    "http://s3.gen.test/__trap/redirect/1?to=http://s3.gen.test/": ("redirect_perm", 301),
    "http://s4.gen.test/__trap/timeout/5": ("retry", 0),
}


@pytest.fixture(scope="module")
def crawled(spark, tmp_path_factory):
    """Crawl once for all the checks of this module."""
    from crawlkit.conf import make_conf
    from crawlkit.replay import ReplayServer

    tmp = tmp_path_factory.mktemp("round")
    server = ReplayServer(["gen:200,seed=3,hosts=5"], workdir=tmp / "replay",
                          robots={"s1.gen.test": "User-agent: *\nDisallow: /private/\n"}).start()
    seeds = tmp / "seeds.txt"
    seeds.write_text("http://s0.gen.test/\n" + "\n".join(TRAPS) + "\nnot a url\n")
    conf = make_conf(crawl__dir=str(tmp / "crawl"), crawl__topN=80, generate__max_per_host=20,
                     generate__partitions=2, fetcher__proxy=server.proxy_url,
                     fetcher__server_delay=DELAY, fetcher__threads=8, fetcher__read_timeout=1.0,
                     fetcher__page_deadline=3.0, spark__shuffle_partitions=2)
    ticks = count()
    clock = lambda: NOW + timedelta(hours=next(ticks))  # noqa: E731  inject at +0h, rounds at +1h, +2h, +3h
    tracker = spark.sparkContext.statusTracker()
    stages = ("generate", "fetch", "parse", "updatedb", "score")
    # the session's earlier tests ran jobs in these groups too: count this crawl's only
    before = {stage: set(tracker.getJobIdsForGroup(f"crawlkit-{stage}")) for stage in stages}
    reports = run_crawl(spark, conf, str(seeds), 3, clock, log=lambda _m: None)
    job_groups = {stage: len(set(tracker.getJobIdsForGroup(f"crawlkit-{stage}")) - before[stage])
                  for stage in stages}
    yield dict(conf=conf, server=server, reports=reports, log=server.access_log(), job_groups=job_groups,
               group_after=spark.sparkContext.getLocalProperty("spark.jobGroup.id"),
               db={r.url: r for r in storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()},
               links=linkdb.read_current(spark, conf["crawl.dir"]).collect())
    server.stop()


def page_requests(log):
    return [r for r in log if not r["url"].endswith("/robots.txt")]


def test_three_rounds_ran_and_fetched_pages(crawled):
    assert len(crawled["reports"]) == 3
    assert sum(r.counters["fetch"]["pages"] for r in crawled["reports"]) >= 80
    assert crawled["reports"][0].counters["generate"]["generated"] == 1 + len(TRAPS)


def test_spark_jobs_are_tagged_with_their_stage(crawled):
    """The Spark UI and event log name the crawlkit stage of every job; the tag is lifted after.
    The fetch tasks parsed the pages (fetcher.parse), so the parse stage ran no job."""
    groups = crawled["job_groups"]
    assert groups.pop("parse") == 0
    assert all(n > 0 for n in groups.values()), groups
    assert crawled["group_after"] is None
    for report in crawled["reports"]:
        assert report.counters["parse"] == report.counters["fetch"]["parsed"]
        assert report.counters["parse"]["pages"] == report.counters["fetch"]["by_status"]["success"]


def test_every_fetched_url_is_in_the_crawldb_with_the_right_status(crawled):
    db = crawled["db"]
    requested = page_requests(crawled["log"])
    urls = [r["url"] for r in requested]
    assert len(urls) == len(set(urls)), "a URL was fetched twice in three rounds"
    for record in requested:
        row = db[record["url"]]
        if record["url"] in TRAPS:
            status, http = TRAPS[record["url"]]
            assert (row.status, record["status"]) == (status, http), record["url"]
        elif record["status"] == 200:
            assert row.status == "fetched", record["url"]
            assert row.fetched_at is not None and row.signature


def test_error_pages_get_their_retry_times(crawled):
    db, conf = crawled["db"], crawled["conf"]
    round1 = NOW + timedelta(hours=1)
    for url in ("http://s2.gen.test/__trap/status/500", "http://s4.gen.test/__trap/timeout/5"):
        assert db[url].retries == 1
        assert db[url].fetch_time == round1 + timedelta(seconds=conf["db.retry_interval"])
    gone = db["http://s2.gen.test/__trap/status/404"]
    assert gone.fetch_time == round1 + timedelta(seconds=conf["db.gone_recheck_interval"])
    redirect = db["http://s3.gen.test/__trap/redirect/1?to=http://s3.gen.test/"]
    assert redirect.metadata["redirect_to"] == "http://s3.gen.test/"


def test_link_table_equals_the_served_links_of_fetched_pages(crawled):
    server, db = crawled["server"], crawled["db"]
    fetched = [u for u, r in db.items() if r.status == "fetched"]
    stored = {(l.src, l.dst) for l in crawled["links"] if l.src in set(fetched)}
    served = {(u, dst) for u in fetched for dst in server.page_info(u)["links"] if dst != u}
    assert stored == served


def test_robots_disallowed_urls_are_never_requested(crawled):
    assert crawled["db"], "crawl produced no rows"
    private = [u for u, r in crawled["db"].items() if u.startswith("http://s1.gen.test/private/")]
    assert private, "the generated web should link to s1's private pages"
    assert all(crawled["db"][u].status in ("gone", "unfetched") for u in private)
    assert not [r for r in crawled["log"] if r["url"].startswith("http://s1.gen.test/private/")]


def test_requests_to_one_host_are_spaced_by_the_delay(crawled):
    by_host = {}
    for record in crawled["log"]:
        by_host.setdefault(record["host"], []).append(record)
    gaps = []
    for records in by_host.values():
        for prev, nxt in zip(records, records[1:]):
            # a request the client abandoned (no answer, status 0) ends when the client gave up,
            # which the server does not see: measure from its start then
            ended = prev["ts"] + (prev["duration"] if prev["status"] else 0.0)
            gaps.append(nxt["ts"] - ended)
    assert len(gaps) > 100
    assert min(gaps) >= DELAY - 0.02  # the log times the server side; allow clock granularity


def test_next_fetch_list_is_ordered_by_score_and_capped(spark, crawled):
    conf = crawled["conf"]
    db = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb")
    by_score = generate(db, conf.with_overrides({"generate.policy": "score"}), NOW + timedelta(hours=4), "next").collect()
    scores = [r.score for r in by_score]
    assert scores == sorted(scores, reverse=True)
    # The default fetch list takes the score list's and the backlinks list's best in turn: the
    # rounds scored backlinks too, and the best of each list leads it.
    fetchlist = generate(db, conf, NOW + timedelta(hours=4), "next").collect()
    assert fetchlist, "unfetched URLs remain after three rounds"
    backlinks = {r.url: (r.scores or {}).get("backlinks") for r in db.collect()}
    assert all(backlinks[r.url] is not None for r in fetchlist)
    assert fetchlist[0].url == by_score[0].url
    assert max(backlinks[r.url] for r in fetchlist[:2]) == max(backlinks[r.url] for r in fetchlist)
    per_host = {}
    for row in fetchlist:
        per_host[row.host] = per_host.get(row.host, 0) + 1
    assert max(per_host.values()) <= conf["generate.max_per_host"]
    assert len(fetchlist) <= conf["crawl.topN"]
    assert len({r.url for r in fetchlist}) == len(fetchlist)
