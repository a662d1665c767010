"""Two focused rounds through the replay web: the scoring run keeps hot_distance and the
hot-queue flag in the crawldb, and the hot pages it finds are the web's topical pages; with
focus.interleave the round also scores the interleaved metric, whose MERGE leaves the focus
columns to the main scorer's."""
from datetime import datetime, timedelta
from itertools import count

import pytest

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_crawl
from crawlkit.replay.generated import GeneratedWeb
from crawlkit.replay.testing import replay_factory  # noqa: F401  (fixture)

SPEC = "gen:60,seed=5,hosts=2,topic=sports,topic_share=0.5"


@pytest.mark.parametrize("policy, also", [
    ({"generate__policy": "hot_queue"}, set()),
    ({"generate__policy": "interleave", "focus__interleave": ["score", "depth"]}, {"depth"}),
])
def test_focused_rounds_keep_hot_distance(spark, replay_factory, tmp_path, policy, also):
    server = replay_factory([SPEC])
    truth = GeneratedWeb(SPEC)
    (tmp_path / "seeds.txt").write_text("http://s0.gen.test/\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), crawl__topN=15, generate__partitions=2,
                     fetcher__proxy=server.proxy_url, fetcher__server_delay=0.0, spark__shuffle_partitions=2,
                     scoring__scorer="focus", focus__words=list(truth.topic), **policy)
    ticks = count()
    clock = lambda: datetime(2026, 1, 1) + timedelta(hours=next(ticks))  # noqa: E731
    assert len(run_crawl(spark, conf, str(tmp_path / "seeds.txt"), 2, clock, log=lambda _m: None)) == 2

    db = storage.read_table(spark, storage.crawldb_path(conf["crawl.dir"]), "crawldb").collect()
    hot = [r.url for r in db if r.hot_distance == 0]
    assert hot and all(truth.is_topical(truth.find(u)) for u in hot)
    assert any(r.hot_distance == 1 for r in db)
    unfetched = [r for r in db if r.status == "unfetched"]
    assert unfetched and all({"focus", "hot_link", *also} <= set(r.scores) for r in unfetched)
    assert any(r.scores["hot_link"] == 1.0 for r in unfetched)
