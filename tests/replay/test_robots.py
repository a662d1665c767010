"""robots.txt per host: text with rules and Crawl-delay, error statuses, timeouts, redirects."""

from __future__ import annotations

import time

import pytest
import requests
from protego import Protego

from crawlkit.replay import GeneratedWeb
from crawlkit.replay.changes import Clock
from crawlkit.replay.messages import Request
from crawlkit.replay.robots import RobotsConfig
from crawlkit.replay.rules import FaultRules
from crawlkit.replay.urls import split_url
from crawlkit.replay.warc import WarcArchive
from crawlkit.replay.web import Web

from .conftest import raw_get, write_warc

ROBOTS = {
    "rules.test": "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n",
    "down.test": {"status": 503},
    "broken.test": {"status": 500},
    "absent.test": {"status": 404},
    "slow.test": {"timeout": 0.3},
    "moved.test": {"redirect": "http://rules.test/robots.txt"},
    "*.glob.test": {"text": "User-agent: *\nDisallow: /\n"},
    "inject.test": {"redirect": "http://rules.test/robots.txt\r\nX-Injected: 1"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from crawlkit.replay import ReplayServer
    with ReplayServer(["gen:300,seed=1,robots=0.2,crawl_delay=1.5"], robots=ROBOTS,
                      workdir=tmp_path_factory.mktemp("robots")) as server:
        yield server


def robots(server, host, **kwargs):
    return requests.get(f"http://{host}/robots.txt", proxies=server.proxies, timeout=10, **kwargs)


def test_rules_and_crawl_delay(server):
    response = robots(server, "rules.test")
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
    parsed = Protego.parse(response.text)
    assert not parsed.can_fetch("http://rules.test/private/x.html", "crawlkit")
    assert parsed.can_fetch("http://rules.test/public.html", "crawlkit") and parsed.crawl_delay("crawlkit") == 2


@pytest.mark.parametrize("host, status", [("down.test", 503), ("broken.test", 500), ("absent.test", 404),
                                          ("unconfigured.test", 404)])
def test_statuses(server, host, status):
    assert robots(server, host).status_code == status


def test_timeout(server):
    start = time.monotonic()
    with pytest.raises(requests.ConnectionError):
        robots(server, "slow.test")
    assert time.monotonic() - start >= 0.3


def test_redirect_to_another_robots_txt(server):
    response = robots(server, "moved.test")
    assert response.history[0].status_code == 301 and response.url == "http://rules.test/robots.txt"
    assert "Crawl-delay: 2" in response.text


def test_control_characters_in_header_values_are_escaped(server):
    status, _, headers, _ = raw_get(server.port, "http://inject.test/robots.txt")
    assert status == 301 and "X-Injected" not in dict(headers)
    assert dict(headers)["Location"] == "http://rules.test/robots.txt%0D%0AX-Injected: 1"


def test_glob_hosts(server):
    assert robots(server, "a.glob.test").text == "User-agent: *\nDisallow: /\n"


def test_generated_hosts_with_robots(server):
    web = GeneratedWeb("gen:300,seed=1,robots=0.2,crawl_delay=1.5")
    host = next(iter(web.robots()))
    parsed = Protego.parse(robots(server, host).text)
    assert parsed.crawl_delay("crawlkit") == 1.5
    assert not parsed.can_fetch(f"http://{host}/private/p1.html", "crawlkit")
    assert robots(server, "s0.gen.test").status_code == 404


def test_archived_robots_txt_then_default_entry(tmp_path):
    write_warc(tmp_path / "a.warc.gz", [("http://arch.test/robots.txt",
                                         b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nUser-agent: *\nDisallow: /a\n")])
    web = Web([WarcArchive(tmp_path / "a.warc.gz")], FaultRules([]),
              RobotsConfig({"*": {"status": 503}, "override.test": "User-agent: *\n"}), Clock())

    def get(url):
        return web.respond(Request("GET", url, *split_url(url), {}, ""))

    assert get("http://arch.test/robots.txt").body.endswith(b"Disallow: /a\n")
    assert get("http://other.test/robots.txt").status == 503
    assert get("http://override.test/robots.txt").body == b"User-agent: *\n"


def test_file_globs_override_generated_hosts(tmp_path):
    from crawlkit.replay.web import load_web
    (tmp_path / "robots.json").write_text('{"*.gen.test": "User-agent: *\\nDisallow: /\\n", "*": {"status": 503}}')
    web = load_web(["gen:400,seed=1,robots=0.2"], robots=tmp_path / "robots.json")
    generated = GeneratedWeb("gen:400,seed=1,robots=0.2").robots()
    assert generated and "s0.gen.test" not in generated
    for host in [*generated, "s0.gen.test"]:
        url = f"http://{host}/robots.txt"
        assert web.respond(Request("GET", url, *split_url(url), {}, "")).body == b"User-agent: *\nDisallow: /\n"


def test_bad_entries_are_rejected(tmp_path):
    with pytest.raises(ValueError):
        RobotsConfig({"a.test": {"stauts": 404}})
    (tmp_path / "robots.toml").write_text('["a.test"]\nstatus = 410\n\n["b.test"]\ntext = "User-agent: *"\n')
    config = RobotsConfig.load(tmp_path / "robots.toml")
    assert config.respond("a.test").status == 410 and config.respond("b.test").body == b"User-agent: *"
