"""Change over time: the change model, the clock, conditional GET, ETag and Last-Modified."""

from __future__ import annotations

import os
from email.utils import parsedate_to_datetime

import numpy as np
import pytest
import requests

from crawlkit.replay.changes import ChangeModel, Clock, parse_change_spec, parse_duration

from .conftest import hrefs

DAY = 86400.0


def test_change_spec_and_durations():
    assert parse_duration("90") == 90 and parse_duration("15m") == 900 and parse_duration("2w") == 14 * DAY
    classes = parse_change_spec("2:never,1:1d,1:30d")
    assert [c.share for c in classes] == [0.5, 0.25, 0.25] and classes[0].interval is None
    for bad in ("", "0.5", "1:soon", "-1:1d", "1:0"):
        with pytest.raises(ValueError):
            parse_change_spec(bad)


def test_classes_get_their_share_and_times_are_deterministic():
    model = ChangeModel("0.5:never,0.5:1d", seed=3)
    urls = [f"http://c.test/{i}" for i in range(2000)]
    never = [u for u in urls if model.interval(u) is None]
    assert 0.45 < len(never) / len(urls) < 0.55
    assert all(model.change_times(u, 100 * DAY) == [] for u in never[:50])
    other = ChangeModel("0.5:never,0.5:1d", seed=3)
    changing = [u for u in urls if u not in set(never)][:50]
    assert all(model.change_times(u, 30 * DAY) == other.change_times(u, 30 * DAY) for u in changing)
    assert ChangeModel("0.5:never,0.5:1d", seed=4).change_times(changing[0], 30 * DAY) != model.change_times(changing[0], 30 * DAY)


def test_change_times_are_a_poisson_process_with_the_class_rate():
    model = ChangeModel("1:2d")
    counts = [len(model.change_times(f"http://p.test/{i}", 100 * DAY)) for i in range(300)]
    assert 45 < np.mean(counts) < 55  # 100 days / 2 days
    assert 25 < np.var(counts) < 80  # Poisson: variance close to the mean
    assert model.rate("http://p.test/1") == pytest.approx(1 / (2 * DAY))


def test_versions_grow_with_the_clock_and_earlier_queries_agree():
    model = ChangeModel("1:1d")
    url = "http://v.test/"
    late = model.change_times(url, 50 * DAY)
    assert model.change_times(url, 10 * DAY) == [t for t in late if t <= 10 * DAY]
    versions = [model.version(url, t * DAY)[0] for t in range(0, 50, 5)]
    assert versions == sorted(versions) and versions[0] == 0 and versions[-1] > 20


def test_clock_file(tmp_path):
    path = tmp_path / "clock"
    clock = Clock(5.0, str(path))
    assert clock.now() == 5.0  # no file yet
    for value in ("100", "250.5"):
        (tmp_path / "clock.tmp").write_text(value)
        os.replace(tmp_path / "clock.tmp", path)
        assert clock.now() == float(value)
    clock.set(7)
    assert clock.now() == 7  # the latest setting wins
    with pytest.raises(ValueError):
        clock.set(-1)


def test_bad_clock_file_keeps_the_last_good_value(tmp_path, capsys):
    path = tmp_path / "clock"
    clock = Clock(0.0, str(path))
    for value, expected in (("100", 100.0), ("1e3x", 100.0), ("-5", 100.0), ("nan", 100.0), ("200", 200.0)):
        (tmp_path / "clock.tmp").write_text(value)
        os.replace(tmp_path / "clock.tmp", path)
        assert clock.now() == expected, value
    log = capsys.readouterr().err
    assert "'1e3x'" in log and "-5" in log and "nan" in log and "stays at 100" in log


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from crawlkit.replay import ReplayServer
    with ReplayServer(["gen:100,seed=2"], changes="0.5:never,0.5:1d", workdir=tmp_path_factory.mktemp("changes")) as server:
        yield server


def changing_url(server, changes: bool) -> str:
    from crawlkit.replay import GeneratedWeb
    model = ChangeModel("0.5:never,0.5:1d")
    web = GeneratedWeb("gen:100,seed=2")
    return next(u for u in map(web.url, range(100)) if (model.interval(u) is not None) == changes)


def test_conditional_get_and_change_after_the_clock_moves(server):
    url = changing_url(server, changes=True)
    server.set_clock(0)
    first = requests.get(url, proxies=server.proxies)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert first.status_code == 200
    for headers in ({"If-None-Match": etag}, {"If-Modified-Since": modified}, {"If-None-Match": f'"x", W/{etag}'}):
        unchanged = requests.get(url, proxies=server.proxies, headers=headers)
        assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged.headers["ETag"] == etag

    server.set_clock(20 * DAY)
    assert server.clock() == 20 * DAY
    truth = server.page_info(url)
    assert truth["version"] == len(truth["change_times"]) > 0 and truth["interval"] == DAY
    changed = requests.get(url, proxies=server.proxies, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag and changed.content != first.content
    assert changed.headers["ETag"] == truth["etag"] and hrefs(changed.text) == truth["links"]
    last_change = parsedate_to_datetime(changed.headers["Last-Modified"]).timestamp()
    assert last_change == pytest.approx(1704067200 + truth["change_times"][-1], abs=1)
    assert requests.get(url, proxies=server.proxies, headers={"If-Modified-Since": modified}).status_code == 200


def test_pages_that_never_change(server):
    url = changing_url(server, changes=False)
    server.set_clock(0)
    before = requests.get(url, proxies=server.proxies)
    server.set_clock(365 * DAY)
    after = requests.get(url, proxies=server.proxies, headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_code == 304 and server.page_info(url)["change_times"] == []
    assert requests.get(url, proxies=server.proxies).content == before.content


def test_date_header_follows_the_clock(server):
    server.set_clock(DAY)
    response = requests.get("http://s0.gen.test/", proxies=server.proxies)
    assert response.headers["Date"] == "Tue, 02 Jan 2024 00:00:00 GMT"


def test_clock_file_drives_a_running_server(tmp_path):
    from crawlkit.replay import ReplayServer
    clock_file = tmp_path / "clock"
    with ReplayServer(["gen:50"], workdir=tmp_path / "run", extra_args=["--clock", str(clock_file)]) as server:
        assert requests.get("http://s0.gen.test/", proxies=server.proxies).headers["Date"].endswith("2024 00:00:00 GMT")
        (tmp_path / "clock.tmp").write_text(str(3 * DAY + 60))
        os.replace(tmp_path / "clock.tmp", clock_file)
        response = requests.get("http://s0.gen.test/", proxies=server.proxies)
        assert response.headers["Date"] == "Thu, 04 Jan 2024 00:01:00 GMT"
        assert server.access_log()[-1]["clock"] == 3 * DAY + 60
