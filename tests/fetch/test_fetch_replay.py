"""The fetcher end to end through the replay web (a local forward proxy serving made-up
hosts): outcomes of faults, robots.txt, politeness measured in the access log, limits."""
import threading
import time

from fetch_helpers import NOW, fetch_row, requests_to

from crawlkit.conf import make_conf
from crawlkit.fetch import fetch_partition


def trap(host: str, path: str) -> str:
    return f"http://{host}/__trap/{path}"


def test_fault_outcomes(fetch):
    expected = {
        trap("f1.test", "page"): ("success", None),
        trap("f2.test", "status/404"): ("not_found", None),
        trap("f3.test", "status/410"): ("gone", None),
        trap("f4.test", "status/403"): ("access_denied", None),
        trap("f5.test", "status/500"): ("retry", None),
        trap("f6.test", "type/pdf"): ("unsupported_type", None),
        trap("f7.test", "timeout/10"): ("retry", "read timeout"),
        trap("f8.test", "drip?every=0.2"): ("retry", "deadline"),
        trap("f9.test", "reset"): ("retry", "connection reset"),
        trap("f10.test", "length/100"): ("retry", "incomplete body"),
        trap("f11.test", "encoding/broken"): ("retry", "bad content-encoding"),
        trap("f12.test", "status/503?retry_after=7"): ("retry", None),
    }
    results, stats = fetch(list(expected), fetcher__read_timeout=1.0, fetcher__page_deadline=2.0)
    assert {url: (r["fetch_status"], r["error"]) for url, r in results.items()} == expected
    assert results[trap("f1.test", "page")]["content"].startswith(b"<!DOCTYPE html>")
    assert results[trap("f6.test", "type/pdf")]["content"] is None
    assert results[trap("f6.test", "type/pdf")]["content_type"] == "application/pdf"
    assert results[trap("f12.test", "status/503?retry_after=7")]["retry_after"] == 7
    assert results[trap("f2.test", "status/404")]["http_status"] == 404
    assert stats.by_status["retry"] == 7 and stats.rows == len(expected)


def test_drip_fed_tarpit_is_cut_at_the_deadline(fetch):
    url = trap("tarpit.test", "drip?every=0.1")    # the whole page takes ~15 s
    started = time.monotonic()
    results, _ = fetch([url], fetcher__page_deadline=1.0, fetcher__read_timeout=5.0)
    assert results[url]["fetch_status"] == "retry" and results[url]["error"] == "deadline"
    assert time.monotonic() - started < 3.0


def test_size_limits(fetch):
    big, bomb = trap("big.test", "big/3"), trap("bomb.test", "bomb/268435456")
    gz, raw = trap("gz.test", "encoding/gzip"), trap("gz.test", "encoding/raw-deflate")
    results, _ = fetch([big, bomb, gz, raw], fetcher__max_content=100_000)
    assert results[big]["fetch_status"] == "success" and results[big]["truncated"]
    assert len(results[big]["content"]) == 100_000
    assert results[bomb]["truncated"] and results[bomb]["error"] == "decompression limit"
    assert len(results[bomb]["content"]) <= 100_000
    for url in (gz, raw):
        assert results[url]["fetch_status"] == "success"
        assert results[url]["content"].startswith(b"<!DOCTYPE html>")
        assert not results[url]["truncated"]


def test_redirects_are_recorded_not_followed(fetch, replay):
    perm = trap("r1.test", "redirect/1?relative=1")
    temp = trap("r2.test", "redirect/1?status=302&relative=1")
    see_other = trap("r3.test", "redirect/1?status=303")
    results, _ = fetch([perm, temp, see_other])
    assert results[perm]["fetch_status"] == "redirect_perm"
    assert results[perm]["redirect_url"] == "http://r1.test/__trap/page/redirect-target"
    assert results[temp]["fetch_status"] == "redirect_temp"
    assert results[temp]["redirect_url"] == "http://r2.test/__trap/page/redirect-target"
    assert results[see_other]["fetch_status"] == "redirect_temp"
    assert [r["url"] for r in requests_to(replay, "r1.test")] == ["http://r1.test/robots.txt", perm]


def test_redirects_followed_inline_when_asked(fetch):
    chain = trap("follow.test", "redirect/3?relative=1")
    loop = trap("loop.test", "loop/2")
    results, _ = fetch([chain, loop], fetcher__follow_redirects=5)
    assert results[chain]["fetch_status"] == "success"
    assert results[chain]["redirect_url"] == "http://follow.test/__trap/page/redirect-target"
    assert results[chain]["content"]
    assert results[loop]["fetch_status"] == "redirect_temp"
    assert results[loop]["error"] == "redirect loop"
    short, _ = fetch([trap("short.test", "redirect/3")], fetcher__follow_redirects=1)
    only = short[trap("short.test", "redirect/3")]
    assert only["fetch_status"] == "redirect_perm" and "/__trap/redirect/1" in only["redirect_url"]


def test_robots_rules_are_obeyed_and_denied_urls_never_requested(fetch, replay):
    urls = ["http://robots.test/open", "http://robots.test/private/a",
            "http://robots.test/secret/a", "http://robots.test/secret/b"]
    results, _ = fetch(urls)
    # the crawlkit group applies, not the * group: /private/ is allowed, /secret/ is not
    assert results["http://robots.test/secret/a"]["fetch_status"] == "robots_denied"
    assert results["http://robots.test/secret/b"]["fetch_status"] == "robots_denied"
    assert results["http://robots.test/private/a"]["fetch_status"] == "not_found"
    requested = [r["url"] for r in requests_to(replay, "robots.test")]
    assert requested[0] == "http://robots.test/robots.txt"
    assert not any("/secret/" in url for url in requested)


def test_robots_unreachable_means_retry_for_the_whole_host(fetch, replay):
    urls = [f"http://robots503.test/p{i}" for i in range(3)]
    hang = ["http://robotshang.test/a", "http://robotshang.test/b"]
    results, _ = fetch(urls + hang, fetcher__read_timeout=0.5)
    assert {r["fetch_status"] for r in results.values()} == {"retry"}
    assert results[urls[0]]["error"] == "robots.txt unreachable: http 503"
    assert results[hang[0]]["error"] == "robots.txt unreachable: read timeout"
    assert [r["url"] for r in requests_to(replay, "robots503.test")] == [
        "http://robots503.test/robots.txt"]


def test_robots_404_allows_and_redirects_are_followed(fetch):
    results, _ = fetch(["http://robots404.test/__trap/page", "http://robotsmoved.test/secret/x",
                        "http://robotsmoved.test/__trap/page"])
    assert results["http://robots404.test/__trap/page"]["fetch_status"] == "success"
    assert results["http://robotsmoved.test/secret/x"]["fetch_status"] == "robots_denied"
    assert results["http://robotsmoved.test/__trap/page"]["fetch_status"] == "success"


def test_robots_can_be_ignored(fetch, replay):
    results, _ = fetch(["http://robots.test/secret/ignored"], fetcher__respect_robots=False)
    assert results["http://robots.test/secret/ignored"]["fetch_status"] == "not_found"


def gaps(records):
    """Seconds between the end of each request and the start of the next (server side)."""
    return [b["ts"] - (a["ts"] + a["duration"]) for a, b in zip(records, records[1:])]


def test_server_delay_between_requests_to_one_host(fetch, replay):
    urls = [f"http://polite.test/__trap/page/{i}" for i in range(4)]
    results, _ = fetch(urls, fetcher__server_delay=0.25)
    assert {r["fetch_status"] for r in results.values()} == {"success"}
    records = requests_to(replay, "polite.test")
    assert len(records) == 5                               # robots.txt + 4 pages
    assert min(gaps(records)) >= 0.25 - 0.01


def test_crawl_delay_overrides_server_delay_and_is_capped(fetch, replay):
    delayed = [f"http://delayed.test/__trap/page/{i}" for i in range(3)]
    slow = [f"http://slowpoke.test/__trap/page/{i}" for i in range(3)]
    fetch(delayed + slow, fetcher__server_delay=0.0, fetcher__max_crawl_delay=0.2)
    assert min(gaps(requests_to(replay, "delayed.test"))) >= 0.2 - 0.01   # 0.3 capped at 0.2
    slow_gaps = gaps(requests_to(replay, "slowpoke.test"))
    assert min(slow_gaps) >= 0.2 - 0.01 and max(slow_gaps) < 1.0          # 100 s capped
    fetch([f"http://delayed.test/__trap/page/again{i}" for i in range(2)],
          fetcher__server_delay=0.0, fetcher__max_crawl_delay=30.0)
    assert gaps(requests_to(replay, "delayed.test"))[-1] >= 0.3 - 0.01


def test_many_hosts_are_fetched_in_parallel(fetch, replay):
    hosts = [f"par{i}.test" for i in range(8)]
    urls = [f"http://{host}/__trap/page/{n}" for host in hosts for n in range(3)]
    started = time.monotonic()
    results, _ = fetch(urls, fetcher__server_delay=0.3, fetcher__threads=8)
    elapsed = time.monotonic() - started
    assert {r["fetch_status"] for r in results.values()} == {"success"}
    # each host: robots.txt + 3 pages, 3 delays of 0.3 s; one host after another would be 7 s
    assert elapsed < 3.0
    for host in hosts:
        assert min(gaps(requests_to(replay, host))) >= 0.3 - 0.01


def test_conditional_get_gives_not_modified(fetch, replay):
    url = "http://s0.gen.test/"
    first, _ = fetch([url])
    headers = first[url]["headers"]
    assert first[url]["fetch_status"] == "success" and headers["etag"]
    again, _ = fetch([fetch_row(url, etag=headers["etag"])])
    assert again[url]["fetch_status"] == "not_modified" and again[url]["content"] is None
    since, _ = fetch([fetch_row(url, last_modified=headers["last-modified"])])
    assert since[url]["fetch_status"] == "not_modified"


def test_host_error_cap_skips_the_rest_of_the_host(fetch):
    urls = [f"http://flaky.test/__trap/timeout/{5 + i}" for i in range(5)]
    results, stats = fetch(urls, fetcher__read_timeout=0.3, fetcher__max_exceptions_per_host=2)
    outcomes = [(results[url]["fetch_status"], results[url]["error"]) for url in urls]
    assert outcomes[:2] == [("retry", "read timeout")] * 2
    assert outcomes[2:] == [("skipped", "host error cap")] * 3
    assert stats.errors["host error cap"] == 3


def test_server_errors_back_the_host_off_and_close_it(fetch, replay):
    failing = [trap("failing.test", f"status/{code}") for code in (500, 502, 504)] + [
        f"http://failing.test/__trap/page/{i}" for i in range(2)]
    recovering = [trap("recovering.test", "status/500"), trap("recovering.test", "status/429")] + [
        f"http://recovering.test/__trap/page/{i}" for i in range(2)]
    results, _ = fetch(failing + recovering, fetcher__server_delay=0.1,
                       fetcher__error_backoff=2.0, fetcher__max_exceptions_per_host=3)
    assert [results[url]["fetch_status"] for url in failing[:3]] == ["retry"] * 3
    for url in failing[3:]:                   # three 5xx in a row close the host for the round
        assert (results[url]["fetch_status"], results[url]["error"]) == ("skipped", "host error cap")
    assert len(requests_to(replay, "failing.test")) == 1 + 3     # robots.txt, then the three
    assert [results[url]["fetch_status"] for url in recovering] == ["retry"] * 2 + ["success"] * 2
    waited = gaps(requests_to(replay, "recovering.test"))[1:]     # after robots.txt
    # 0.1 s doubled after the 500, doubled again after the 429; back to 0.1 s after a page
    assert waited[0] >= 0.2 - 0.01 and waited[1] >= 0.4 - 0.01
    assert 0.1 - 0.01 <= waited[2] < 0.4


def test_long_retry_after_skips_the_host_short_one_pauses_it(fetch, replay):
    long_wait = [trap("busy.test", "status/429?retry_after=3600")] + [
        f"http://busy.test/__trap/page/{i}" for i in range(2)]
    short_wait = [trap("pause.test", "status/503?retry_after=1")] + [
        f"http://pause.test/__trap/page/{i}" for i in range(2)]
    results, _ = fetch(long_wait + short_wait, fetcher__max_host_pause=5.0)
    assert results[long_wait[0]]["retry_after"] == 3600
    for url in long_wait[1:]:
        assert (results[url]["fetch_status"], results[url]["error"]) == ("skipped", "retry-after")
        assert results[url]["retry_after"] == 3600
    assert {results[url]["fetch_status"] for url in short_wait[1:]} == {"success"}
    paused = requests_to(replay, "pause.test")
    assert paused[2]["ts"] - (paused[1]["ts"] + paused[1]["duration"]) >= 1.0 - 0.01


def test_time_limit_skips_what_is_left(fetch):
    urls = [f"http://limited.test/__trap/page/{i}" for i in range(20)]
    started = time.monotonic()
    results, _ = fetch(urls, fetcher__server_delay=0.4, fetcher__time_limit=1.0)
    assert time.monotonic() - started < 2.5
    statuses = [results[url]["fetch_status"] for url in urls]
    assert "success" in statuses and statuses.count("skipped") >= 15
    assert {results[u]["error"] for u in urls if results[u]["fetch_status"] == "skipped"} == {
        "time limit"}


def test_internal_targets_are_blocked_before_the_proxy_is_asked(fetch, replay):
    urls = ["http://127.0.0.1/admin", "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/x", "http://10.0.0.1/"]
    results, _ = fetch(urls)
    assert {r["fetch_status"] for r in results.values()} == {"blocked"}
    logged = {r["url"] for r in replay.access_log()}
    assert not logged & set(urls)


def test_results_stream_as_they_complete(replay):
    conf = make_conf(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0,
                     fetcher__threads=2, fetcher__read_timeout=5.0, fetcher__page_deadline=5.0,
                     fetcher__proxy_resolve_targets=False)
    rows = [fetch_row(trap("slowstream.test", "delay/1.5")), fetch_row(trap("fast.test", "page"))]
    started = time.monotonic()
    results = fetch_partition(rows, conf, NOW)
    first = next(results)
    assert first["url"] == trap("fast.test", "page") and time.monotonic() - started < 1.0
    assert next(results)["fetch_status"] == "success"
    assert next(results, None) is None


def test_closing_early_stops_the_threads(replay):
    conf = make_conf(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.5,
                     fetcher__threads=2, fetcher__proxy_resolve_targets=False)
    rows = [fetch_row(f"http://early.test/__trap/page/{i}") for i in range(10)]
    results = fetch_partition(rows, conf, NOW)
    next(results)
    started = time.monotonic()
    results.close()
    assert time.monotonic() - started < 1.0


def test_a_small_read_ahead_still_answers_every_row(fetch):
    urls = [f"http://ahead{i % 3}.test/__trap/page/{i}" for i in range(12)]
    results, stats = fetch(urls, fetcher__queue_capacity=2)
    assert {r["fetch_status"] for r in results.values()} == {"success"}
    summary = stats.as_dict()
    assert summary["rows"] == 12 and summary["requests"] == 12
    assert summary["by_status"] == {"success": 12} and summary["bytes"] > 0
    assert {host for host, _ in summary["slowest_hosts"]} == {"ahead0.test", "ahead1.test",
                                                              "ahead2.test"}
    assert not [t for t in threading.enumerate() if t.name.startswith("fetch-")]


def test_an_unexpected_error_still_answers_the_row(fetch, monkeypatch):
    from crawlkit.fetch.http import HttpClient

    real_get = HttpClient.get

    def failing_get(self, url, **kwargs):
        if "explode" in url:
            raise RuntimeError("bug")
        return real_get(self, url, **kwargs)

    monkeypatch.setattr(HttpClient, "get", failing_get)
    urls = ["http://boom.test/__trap/page/explode", "http://boom.test/__trap/page/fine"]
    results, _ = fetch(urls)
    assert (results[urls[0]]["fetch_status"], results[urls[0]]["error"]) == (
        "retry", "internal error: RuntimeError")
    assert results[urls[1]]["fetch_status"] == "success"


def test_followed_hops_obey_robots_and_the_guard(fetch, replay):
    denied_hop = trap("hop1.test", "redirect/1?to=http://robots.test/secret/hop")
    blocked_hop = trap("hop2.test", "redirect/1?to=http://169.254.169.254/latest")
    results, _ = fetch([denied_hop, blocked_hop], fetcher__follow_redirects=3)
    assert results[denied_hop]["fetch_status"] == "redirect_perm"
    assert results[denied_hop]["redirect_url"] == "http://robots.test/secret/hop"
    assert results[blocked_hop]["fetch_status"] == "blocked"
    logged = {r["url"] for r in replay.access_log()}
    assert "http://robots.test/secret/hop" not in logged
    assert "http://169.254.169.254/latest" not in logged


def test_silent_server_is_cut_at_the_page_deadline(fetch):
    url = trap("silent.test", "delay/5")
    results, _ = fetch([url], fetcher__page_deadline=0.8, fetcher__read_timeout=3.0)
    assert (results[url]["fetch_status"], results[url]["error"]) == ("retry", "deadline")


def test_the_time_limit_is_the_stage_s_so_a_late_task_gets_what_is_left(replay):
    """fetcher.time_limit counts from the fetch stage's start on the driver (``ends_at``): a
    task that starts when the stage's time is spent (a later wave of tasks) fetches nothing."""
    conf = make_conf(fetcher__proxy=replay.proxy_url, fetcher__server_delay=0.0,
                     fetcher__proxy_resolve_targets=False, fetcher__time_limit=600.0)
    urls = [f"http://late.test/__trap/page/{i}" for i in range(5)]
    results = list(fetch_partition([fetch_row(u) for u in urls], conf, NOW, ends_at=time.time() - 1))
    assert {r["fetch_status"] for r in results} == {"skipped"}
    assert not requests_to(replay, "late.test")
    on_time = list(fetch_partition([fetch_row(u) for u in urls], conf, NOW, ends_at=time.time() + 600))
    assert {r["fetch_status"] for r in on_time} == {"success"}
