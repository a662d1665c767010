"""generate: due URLs only, lock, min score, per-host/domain caps, exact top-N, host partitions."""
from datetime import datetime, timedelta

from chispa import assert_df_equality

from crawlkit.conf import make_conf
from crawlkit.stages.generate import generate, partition_by_host

from sparkhelpers import crawldb_rows

NOW = datetime(2026, 3, 1, 12, 0, 0)
LATER = NOW + timedelta(days=1)


def db(spark):
    return crawldb_rows(spark, [
        {"url": "http://a.test/1", "host": "a.test", "domain": "a.test", "score": 0.9},
        {"url": "http://a.test/2", "host": "a.test", "domain": "a.test", "score": 0.8},
        {"url": "http://a.test/3", "host": "a.test", "domain": "a.test", "score": 0.7},   # over the host cap
        {"url": "http://b.test/1", "host": "b.test", "domain": "b.test", "score": 0.6},
        {"url": "http://b.test/2", "host": "b.test", "domain": "b.test", "score": 0.5, "fetch_time": LATER},  # not due
        {"url": "http://c.test/1", "host": "c.test", "domain": "c.test", "score": 0.4,
         "generated_segment": "20260301110000", "generate_time": NOW - timedelta(hours=1)},  # locked
        {"url": "http://c.test/2", "host": "c.test", "domain": "c.test", "score": 0.3,
         "generated_segment": "20260201000000", "generate_time": NOW - timedelta(days=20)},  # lock expired
        {"url": "http://d.test/1", "host": "d.test", "domain": "d.test", "score": 0.01},  # below min score
        {"url": "http://e.test/1", "host": "e.test", "domain": "e.test", "score": 0.2, "status": "evicted"},
        {"url": "http://f.test/1", "host": "f.test", "domain": "f.test", "score": 0.15,
         "status": "duplicate"},                                # rechecked on its schedule
        {"url": "crawlkit:virtual", "host": "", "domain": None, "score": 1.0},   # reserved pseudo-URL
    ], NOW)


def expected(spark, urls_scores, segment="s1"):
    rows = [(u, u.split("/")[2], s) for u, s in urls_scores]
    return spark.createDataFrame(rows, "url string, host string, score double")


def test_due_unlocked_capped_top_n_in_score_order(spark):
    conf = make_conf(generate__policy="score", generate__max_per_host=2, generate__min_score=0.05, crawl__topN=4)
    got = generate(db(spark), conf, NOW, "s1").select("url", "host", "score")
    want = expected(spark, [("http://a.test/1", 0.9), ("http://a.test/2", 0.8),
                            ("http://b.test/1", 0.6), ("http://c.test/2", 0.3)])
    assert_df_equality(got, want, ignore_nullable=True)


def test_top_n_zero_means_no_limit_and_domain_cap(spark):
    conf = make_conf(generate__max_per_host=0, generate__max_per_domain=1, crawl__topN=0)
    got = generate(db(spark), conf, NOW, "s1").select("url", "host", "score")
    want = expected(spark, [("http://a.test/1", 0.9), ("http://b.test/1", 0.6),
                            ("http://c.test/2", 0.3), ("http://f.test/1", 0.15), ("http://d.test/1", 0.01)])
    assert_df_equality(got, want, ignore_nullable=True)


def test_fetch_list_carries_segment_and_one_host_per_partition(spark):
    conf = make_conf(generate__max_per_host=0, crawl__topN=0)
    fetchlist = generate(db(spark), conf, NOW, "seg-7")
    assert {r.segment for r in fetchlist.collect()} == {"seg-7"}
    parts = partition_by_host(fetchlist, 3).rdd.glom().map(lambda rows: sorted({r.host for r in rows})).collect()
    hosts_seen = [h for part in parts for h in part]
    assert len(hosts_seen) == len(set(hosts_seen))  # no host split over two partitions
    for part in partition_by_host(fetchlist, 3).rdd.glom().collect():
        for host in {r.host for r in part}:
            scores = [r.score for r in part if r.host == host]
            assert scores == sorted(scores, reverse=True)


def ranked_db(spark):
    """u1..u6: PageRank orders them u1 > ... > u6, backlinks u6 > u5 > u1 > u2 > u3 > u4;
    u1 and u6 share a host."""
    pagerank = [0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    backlinks = [7.0, 6.0, 5.0, 4.0, 8.0, 9.0]
    hosts = ["a", "b", "c", "d", "e", "a"]
    return crawldb_rows(spark, [
        {"url": f"http://{h}.test/u{i + 1}", "host": f"{h}.test", "domain": f"{h}.test", "score": pr,
         "scores": {"pagerank": pr, "backlinks": bl}}
        for i, (h, pr, bl) in enumerate(zip(hosts, pagerank, backlinks))], NOW)


def fetch_order(spark, **conf):
    conf = make_conf(**{"generate__interleave": ["pagerank", "backlinks"], "generate__max_per_host": 0, **conf})
    return [r.url.rsplit("/", 1)[1] for r in generate(ranked_db(spark), conf, NOW, "s1").collect()]


def test_interleave_takes_each_metric_best_in_turn(spark):
    assert fetch_order(spark, crawl__topN=4) == ["u1", "u6", "u2", "u5"]
    assert fetch_order(spark, crawl__topN=4, generate__policy="score") == ["u1", "u2", "u3", "u4"]
    # a focused crawl keeps its topical ordering: no interleaving, unless focus.interleave asks
    assert fetch_order(spark, crawl__topN=4, focus__words=["course"]) == ["u1", "u2", "u3", "u4"]
    assert fetch_order(spark, crawl__topN=4, focus__words=["course"],
                       focus__interleave=["score", "backlinks"]) == ["u1", "u6", "u2", "u5"]


def test_interleave_caps_hosts_across_lists(spark):
    # u1 and u6 (host a) both head a list; the cap keeps the earlier place (PageRank's u1)
    assert fetch_order(spark, crawl__topN=3, generate__max_per_host=1) == ["u1", "u2", "u5"]


def test_the_cut_over_the_best_candidates_gives_the_same_fetch_lists(spark, monkeypatch):
    """generate's caps over a sampled prefix (crawlkit/stages/capped_top.py) against the window
    over every due row, for the score and interleave policies: the same URLs in the same
    order, with either tie break. 1,500 rows on 40 hosts of 8 domains, with scores and backlink
    counts that tie."""
    import random
    from crawlkit.stages import capped_top
    rng = random.Random(11)
    rows = []
    for i in range(1500):
        host = f"h{rng.randrange(40)}.d{rng.randrange(8)}.test"
        rows.append({"url": f"http://{host}/p{i}", "host": host, "domain": host.split(".", 1)[1],
                     "score": rng.randrange(200) / 200, "scores": {"backlinks": float(rng.randrange(12))}})
    crawldb = crawldb_rows(spark, rows, NOW).localCheckpoint(eager=True)
    for policy, tie in (("score", "hash"), ("interleave", "hash"), ("score", "url")):
        conf = make_conf(generate__policy=policy, generate__tie_break=tie, generate__max_per_host=6,
                         generate__max_per_domain=25, crawl__topN=60)
        fetch_lists = {}
        for cut, floor in (("window", 10**12), ("cut", 0)):
            monkeypatch.setattr(capped_top, "MIN_POPULATION", floor)
            fetchlist = generate(crawldb, conf, NOW, "s1")
            fetch_lists[cut] = [r.url for r in fetchlist.collect()]
            if policy == "score":   # a prefix answered: no window of the caps left in the plan
                windows = "Window" in fetchlist._jdf.queryExecution().optimizedPlan().toString()
                assert windows == (cut == "window")
        assert fetch_lists["cut"] == fetch_lists["window"] and len(fetch_lists["cut"]) == 60, policy
