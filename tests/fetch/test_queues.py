"""Per-host scheduling with a fake clock: order, politeness delays, closures, time limit."""
import math

from crawlkit.fetch.queues import HOST_ERROR_CAP, TIME_LIMIT, Closure, HostQueues
from crawlkit.status import FetchStatus


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def make_queues(clock, **options):
    rejected = []
    settings = dict(threads_per_host=1, delay=1.0, max_errors=3, max_pause=60.0)
    settings.update(options)
    queues = HostQueues(**settings, clock=clock,
                        reject=lambda host, row, closure: rejected.append((row["url"], closure)))
    return queues, rejected


def add(queues, *urls):
    for url in urls:
        queues.add(url.split("/")[2], {"url": url})


def take(queues, clock):
    slot = queues.poll(clock.now)
    assert isinstance(slot, tuple), slot
    return slot


def test_hosts_are_interleaved_and_each_waits_its_delay():
    clock = Clock()
    queues, _ = make_queues(clock)
    add(queues, "http://a/1", "http://a/2", "http://b/1", "http://b/2")
    a, row_a = take(queues, clock)
    b, row_b = take(queues, clock)
    assert (row_a["url"], row_b["url"]) == ("http://a/1", "http://b/1")
    assert queues.poll(clock.now) == math.inf          # both hosts busy
    clock.now = 101.0
    queues.release(a, requested=True)                  # a's request ended at 101
    assert queues.poll(clock.now) == 1.0               # a is due at 102
    clock.now = 101.5
    queues.release(b, requested=True)
    clock.now = 102.0
    assert take(queues, clock)[1]["url"] == "http://a/2"
    assert queues.poll(clock.now) == 0.5               # b due at 102.5
    clock.now = 102.5
    assert take(queues, clock)[1]["url"] == "http://b/2"


def test_the_host_waiting_longest_goes_first():
    clock = Clock()
    queues, _ = make_queues(clock, delay=0.0)
    add(queues, "http://a/1", "http://a/2", "http://b/1", "http://b/2")
    a, _ = take(queues, clock)
    b, _ = take(queues, clock)
    clock.now = 105.0
    queues.release(b, requested=True)
    clock.now = 106.0
    queues.release(a, requested=True)
    assert take(queues, clock)[0] is b and take(queues, clock)[0] is a


def test_threads_per_host_bounds_concurrency():
    clock = Clock()
    queues, _ = make_queues(clock, threads_per_host=2, delay=0.0)
    add(queues, "http://a/1", "http://a/2", "http://a/3")
    take(queues, clock)
    host, _ = take(queues, clock)
    assert queues.poll(clock.now) == math.inf
    queues.release(host, requested=True)
    assert take(queues, clock)[1]["url"] == "http://a/3"


def test_unrequested_slots_do_not_delay_the_host():
    clock = Clock()
    queues, _ = make_queues(clock)
    add(queues, "http://a/1", "http://a/2")
    host, _ = take(queues, clock)
    queues.release(host, requested=False)              # e.g. robots.txt denied it
    assert take(queues, clock)[1]["url"] == "http://a/2"


def test_crawl_delay_replaces_the_default_and_requeue_goes_first():
    clock = Clock()
    queues, _ = make_queues(clock)
    add(queues, "http://a/1", "http://a/2")
    host, row = take(queues, clock)
    queues.release(host, requested=True, delay=5.0, requeue=row)   # robots.txt fetched
    assert queues.poll(clock.now) == 5.0
    clock.now += 5.0
    assert take(queues, clock)[1]["url"] == "http://a/1"


def test_only_consecutive_errors_count():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=0.0, max_errors=2)
    add(queues, "http://a/1", "http://a/2", "http://a/3", "http://a/4")
    for server_error in (True, False, True):        # a success resets the count
        host, _ = take(queues, clock)
        queues.release(host, requested=True, server_error=server_error)
    assert rejected == []
    assert take(queues, clock)[1]["url"] == "http://a/4"


def test_server_errors_in_a_row_back_the_host_off():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=1.0, max_errors=0, max_pause=5.0, backoff=2.0)
    add(queues, *(f"http://a/{i}" for i in range(6)))
    waits = []
    for server_error in (True, True, True, False, True):
        host, _ = take(queues, clock)
        queues.release(host, requested=True, server_error=server_error)
        waits.append(queues.poll(clock.now))
        clock.now += waits[-1]
    # 1 s delay doubled per error in a row, capped at max_pause; an answer resets it
    assert waits == [2.0, 4.0, 5.0, 1.0, 2.0] and rejected == []


def test_back_off_never_shortens_a_long_crawl_delay():
    clock = Clock()
    queues, _ = make_queues(clock, delay=1.0, max_errors=0, max_pause=5.0, backoff=2.0)
    add(queues, "http://a/1", "http://a/2")
    host, _ = take(queues, clock)
    queues.release(host, requested=True, server_error=True, delay=30.0)   # Crawl-delay: 30
    assert queues.poll(clock.now) == 30.0


def test_error_cap_rejects_pending_and_later_rows():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=0.0, max_errors=2)
    add(queues, "http://a/1", "http://a/2", "http://a/3", "http://a/4")
    for _ in range(2):
        host, _ = take(queues, clock)
        queues.release(host, requested=True, server_error=True)
    assert rejected == [("http://a/3", HOST_ERROR_CAP), ("http://a/4", HOST_ERROR_CAP)]
    add(queues, "http://a/5")
    assert rejected[-1] == ("http://a/5", HOST_ERROR_CAP)
    queues.finish_feed()
    assert queues.poll(clock.now) is None


def test_short_retry_after_pauses_the_host_long_one_closes_it():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=0.0, max_pause=30.0)
    add(queues, "http://a/1", "http://a/2", "http://b/1", "http://b/2")
    a, _ = take(queues, clock)
    b, _ = take(queues, clock)
    queues.release(a, requested=True, retry_after=10)
    assert queues.poll(clock.now) == 10.0 and rejected == []
    queues.release(b, requested=True, retry_after=3600)
    assert rejected == [("http://b/2", Closure(FetchStatus.SKIPPED, "retry-after", 3600))]


def test_retry_after_past_the_time_limit_closes_the_host():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=0.0, deadline=clock.now + 5)
    add(queues, "http://a/1", "http://a/2")
    host, _ = take(queues, clock)
    queues.release(host, requested=True, retry_after=10)
    assert [closure.error for _, closure in rejected] == ["retry-after"]


def test_time_limit_rejects_everything_left():
    clock = Clock()
    queues, rejected = make_queues(clock, deadline=clock.now + 10)
    add(queues, "http://a/1", "http://a/2", "http://b/1")
    host, _ = take(queues, clock)
    clock.now += 10
    assert queues.poll(clock.now) is None
    assert sorted(url for url, _ in rejected) == ["http://a/2", "http://b/1"]
    assert {closure for _, closure in rejected} == {TIME_LIMIT}
    queues.release(host, requested=True)               # the request in flight still ends
    add(queues, "http://c/1")                          # rows fed late are answered at once
    assert rejected[-1] == ("http://c/1", TIME_LIMIT)


def test_stops_early_when_nothing_can_start_before_the_time_limit():
    clock = Clock()
    queues, rejected = make_queues(clock, delay=50.0, deadline=clock.now + 10)
    add(queues, "http://a/1", "http://a/2")
    queues.finish_feed()
    host, _ = take(queues, clock)
    queues.release(host, requested=True)               # next start at 150 > deadline 110
    assert queues.poll(clock.now) is None
    assert rejected == [("http://a/2", TIME_LIMIT)]


def test_reject_pending_keeps_order_of_the_rest():
    clock = Clock()
    queues, rejected = make_queues(clock)
    add(queues, "http://a/1", "http://a/x2", "http://a/3", "http://a/x4")
    denied = Closure(FetchStatus.ROBOTS_DENIED, "robots.txt")
    host, _ = take(queues, clock)
    queues.reject_pending(host, lambda row: denied if "/x" in row["url"] else None)
    queues.release(host, requested=False)
    assert [url for url, _ in rejected] == ["http://a/x2", "http://a/x4"]
    assert take(queues, clock)[1]["url"] == "http://a/3"


def test_done_when_feed_finished_and_nothing_pending_or_active():
    clock = Clock()
    queues, _ = make_queues(clock)
    add(queues, "http://a/1")
    host, _ = take(queues, clock)
    queues.finish_feed()
    assert queues.poll(clock.now) == math.inf         # in flight: it may still re-queue
    queues.release(host, requested=True)
    assert queues.poll(clock.now) is None
