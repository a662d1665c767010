"""A full round submitted with spark-submit to a real local standalone cluster (two workers).

The cluster is started with scripts/cluster/start.sh (spark-class master + workers on
127.0.0.1), the package is shipped as a zip with --py-files and the Delta jars with --jars;
the crawl directory is a file:// URI. The result must equal a local-mode run of the same round,
and two executors must never fetch from one host at the same time.
"""
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from crawlkit import storage
from crawlkit.conf import make_conf
from crawlkit.crawl import run_crawl
from crawlkit.replay import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 4, 1, 0, 0, 0)
SETTINGS = {"crawl.topN": "60", "generate.partitions": "2", "generate.max_per_host": "30",
            "fetcher.server_delay": "0.05", "fetcher.threads": "4", "spark.shuffle_partitions": "2"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, CLUSTER_DIR=str(state), MASTER_PORT="17077")
    started = subprocess.run([str(ROOT / "scripts/cluster/start.sh"), "2", "1", "1g"], env=env,
                             capture_output=True, text=True, timeout=300)
    assert started.returncode == 0, started.stderr
    yield started.stdout.strip().splitlines()[-1], env
    subprocess.run([str(ROOT / "scripts/cluster/stop.sh")], env=env, capture_output=True, timeout=120)


def crawldb_state(spark, crawl_dir):
    rows = storage.read_table(spark, storage.crawldb_path(crawl_dir), "crawldb").collect()
    return {r.url: (r.status, r.depth, r.signature, round(r.score, 12)) for r in rows}


def test_spark_submit_round_equals_local_mode(spark, cluster, tmp_path):
    master, env = cluster
    assert master == "spark://127.0.0.1:17077"
    jars = subprocess.run([str(ROOT / "scripts/cluster/package.sh")], capture_output=True, text=True,
                          check=True, cwd=ROOT).stdout.strip()
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://s0.gen.test/\nhttp://s1.gen.test/\n")
    with ReplayServer(["gen:120,seed=5,hosts=4"], workdir=tmp_path / "replay") as web:
        cluster_dir = f"file://{tmp_path}/cluster-crawl"
        conf_args = [a for k, v in {**SETTINGS, "fetcher.proxy": web.proxy_url}.items()
                     for a in ("--conf", f"{k}={v}")]
        submit = subprocess.run(
            [str(Path(sys.executable).parent / "spark-submit"), "--master", master,
             "--jars", jars, "--py-files", str(ROOT / "dist/crawlkit.zip"),
             "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.executor.memory=768m",
             "--conf", "spark.ui.enabled=false",
             str(ROOT / "jobs/crawl.py"), "--seeds", str(seeds), "--rounds", "1",
             "--crawl-dir", cluster_dir, "--now", NOW.isoformat(), "--quiet", *conf_args],
            env=dict(env, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable),
            capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert submit.returncode == 0, submit.stderr[-4000:]
        cluster_log = web.access_log()

        local_dir = str(tmp_path / "local-crawl")
        conf = make_conf(crawl__dir=local_dir, fetcher__proxy=web.proxy_url,
                         **{k.replace(".", "__"): type(make_conf()[k])(v) for k, v in SETTINGS.items()})
        run_crawl(spark, conf, str(seeds), 1, lambda: NOW, log=lambda _m: None)

    cluster_db = crawldb_state(spark, cluster_dir)
    assert len(cluster_db) > 20
    assert cluster_db == crawldb_state(spark, local_dir)

    # politeness across executors: per host, no request starts before the previous one ended
    by_host = {}
    for record in cluster_log:
        by_host.setdefault(record["host"], []).append(record)
    assert len(by_host) >= 2
    for records in by_host.values():
        for prev, nxt in zip(records, records[1:]):
            assert nxt["ts"] >= prev["ts"] + prev["duration"] - 0.001, (prev, nxt)
