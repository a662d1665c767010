"""Pages are matched to fetched URLs by the replay web's own lookup key."""

from __future__ import annotations

from crawlkit.evaluate.web import Web


def test_page_ids_follow_the_replay_lookup_key():
    web = Web(["http://h.test/dir\\page.htm", "http://h.test/%7euser/a%2fb", "https://h.test/docs/"])
    assert web.page_id("http://h.test/dir%5Cpage.htm") == 0  # what a client sends for a backslash
    assert web.page_id("http://H.test:80/~user/a%2Fb") == 1
    assert web.page_id("http://h.test/docs") == 2
    assert web.page_id("http://h.test/~user/a/b") is None
