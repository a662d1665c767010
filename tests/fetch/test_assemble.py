"""assemble: the spilled fetch results become one content row per URL."""
from datetime import datetime, timedelta

from crawlkit import schemas, storage
from crawlkit.conf import make_conf
from crawlkit.stages.fetch import assemble, fetch_remaining, spilled_once

T0 = datetime(2026, 3, 1, 12, 0, 0)


def _parts(spark, rows):
    full = [dict(url=url, host=url.split("/")[2], fetch_status="success", http_status=200,
                 fetched_at=T0 + timedelta(seconds=s), elapsed_ms=5, content_type="text/html",
                 headers={}, content=body, truncated=False, redirect_url=None, retry_after=None,
                 error=None, segment="s1") for url, s, body in rows]
    return spark.createDataFrame(full, schemas.struct("content"))


def test_a_url_spilled_twice_keeps_its_first_fetch_and_others_pass_unchanged(spark):
    once = _parts(spark, [("http://a.test/", 0, b"a"), ("http://b.test/", 1, b"b")])
    assert sorted((r.url, bytes(r.content)) for r in assemble(once).collect()) == [
        ("http://a.test/", b"a"), ("http://b.test/", b"b")]
    twice = _parts(spark, [("http://a.test/", 5, b"retried"), ("http://a.test/", 0, b"first"),
                           ("http://b.test/", 1, b"b")])
    assert sorted((r.url, bytes(r.content)) for r in assemble(twice).collect()) == [
        ("http://a.test/", b"first"), ("http://b.test/", b"b")]


def test_spill_files_of_tasks_that_ran_once_skip_the_search_for_repeated_urls(spark, tmp_path):
    # URLs that fail before any request (no network): every row still gets a fetch status
    urls = [f"http://bad host{i}.test/" for i in range(3)]
    fetchlist = spark.createDataFrame(
        [dict(url=u, host=f"bad host{i}.test", score=1.0, status="unfetched", depth=0, etag=None,
              last_modified=None, signature=None, retries=0, segment="s1") for i, u in enumerate(urls)],
        schemas.struct("fetchlist"))
    parts_uri = storage.absolute(spark, str(tmp_path / "content_parts"))
    conf = make_conf(fetcher__respect_robots=False, fetcher__server_delay=0.0, generate__partitions=2)
    assert fetch_remaining(spark, fetchlist, conf, T0, parts_uri)["rows"] == 3
    assert spilled_once(spark, parts_uri)

    # a second run of a partition's task (a retry, a speculative copy, a resubmitted stage),
    # or a file named before runs were: the parts may repeat a URL
    files = sorted(p.name for p in (tmp_path / "content_parts").iterdir() if p.name.startswith("part-"))
    first = tmp_path / "content_parts" / files[0]
    partition = files[0].split("-")[1]
    assert all(name.startswith(("part-p00000-", "part-p00001-")) for name in files)
    for name in (f"part-{partition}-0123456789ab-00000.parquet", "part-0123456789ab-00000.parquet"):
        copy = first.with_name(name)
        copy.write_bytes(first.read_bytes())
        assert not spilled_once(spark, parts_uri)
        copy.unlink()
    # a task's next spill is the same run
    first.with_name(files[0][:-len("00000.parquet")] + "00001.parquet").write_bytes(first.read_bytes())
    assert spilled_once(spark, parts_uri)
