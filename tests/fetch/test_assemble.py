"""assemble: the spilled fetch results become one content row per URL."""
from datetime import datetime, timedelta

from crawlkit import schemas
from crawlkit.stages.fetch import assemble

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
