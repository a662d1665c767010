"""The generated web: determinism, graph shape, topical text and locality, test subjects."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from crawlkit.replay import GeneratedWeb, LinkGraph
from crawlkit.replay.changes import ChangeModel
from crawlkit.replay.generated import GenSpec
from crawlkit.replay.graph import write_links
from crawlkit.replay.synthetic import SyntheticSite
from crawlkit.replay.text import TOPICS

from .conftest import hrefs


@pytest.fixture(scope="module")
def web() -> GeneratedWeb:
    return GeneratedWeb("gen:20000,seed=3")


def test_same_seed_same_web_other_seed_other_web():
    a, b, c = GeneratedWeb("gen:3000,seed=9"), GeneratedWeb("gen:3000,seed=9"), GeneratedWeb("gen:3000,seed=10")
    assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.targets, b.targets)
    assert np.array_equal(a.topical, b.topical)
    assert not np.array_equal(a.targets[: len(c.targets)], c.targets[: len(a.targets)])
    site_a, site_b = SyntheticSite(a, ChangeModel()), SyntheticSite(b, ChangeModel())
    assert site_a.render(17, 0) == site_b.render(17, 0) and site_a.render(17, 0) != site_a.render(17, 1)


def test_in_degree_is_heavy_tailed(web):
    in_degree = web.in_degree()
    assert in_degree.max() > 50 * np.median(in_degree)
    # a power law, not a bump: the top 1% of pages get a large share of all links
    top = np.sort(in_degree)[::-1][: web.num_pages // 100]
    assert top.sum() > 0.1 * in_degree.sum()


def test_out_degree_and_hosts(web):
    out_degree = np.diff(web.offsets)
    assert out_degree.min() >= 5 and np.median(out_degree) <= 20
    assert len(web.hosts) == round(20000**0.5) and web.host_sizes.sum() == web.num_pages
    assert web.host_sizes.max() > 10 * np.median(web.host_sizes)  # a few big sites, many small


def test_topical_locality(web):
    sources = np.repeat(np.arange(web.num_pages), np.diff(web.offsets))
    to_topical = web.topical[web.targets]
    from_topical = to_topical[web.topical[sources]].mean()
    from_other = to_topical[~web.topical[sources]].mean()
    assert 0.1 < web.topical.mean() < 0.3
    assert from_topical > 2 * from_other


def test_topical_text_title_and_anchors(web):
    site = SyntheticSite(web, ChangeModel())
    vocabulary = set(TOPICS["sports"])

    def topic_share(words):
        return sum(w.strip(".,").lower() in vocabulary for w in words) / len(words)

    topical = np.flatnonzero(web.topical)[:40]
    other = np.flatnonzero(~web.topical)[:40]
    text_topical = " ".join(site.render(int(p), 0).decode() for p in topical).split()
    text_other = " ".join(site.render(int(p), 0).decode() for p in other).split()
    assert topic_share(text_topical) > 5 * topic_share(text_other)
    for page in topical[:10]:
        title = site.render(int(page), 0).decode().split("<title>")[1].split("</title>")[0]
        assert title.split()[0].lower() in vocabulary
    # anchors pointing at topical pages mostly carry topic words, others rarely
    anchors_topical, anchors_other = [], []
    for page in range(300):
        for target in web.out_links(page).tolist():
            anchor = site._make_link_item(target).split('">')[1].split("</a>")[0]
            (anchors_topical if web.is_topical(target) else anchors_other).append(anchor.split()[0] in vocabulary)
    assert np.mean(anchors_topical) > 0.6 and np.mean(anchors_other) < 0.05


def test_custom_topic_words():
    web = GeneratedWeb("gen:500,seed=1,topic=skiing,topic_words=ski+snow+slope,topic_share=0.5")
    assert web.topic == ("ski", "snow", "slope")
    site = SyntheticSite(web, ChangeModel())
    page = int(np.flatnonzero(web.topical)[0])
    assert site.render(page, 0).decode().split("<title>")[1].split()[0].lower() in {"ski", "snow", "slope"}


def test_served_links_are_the_graph_links(web):
    site = SyntheticSite(web, ChangeModel())
    for page in (0, 1, 777, web.num_pages - 1):
        assert hrefs(site.render(page, 0)) == [web.url(t) for t in web.out_links(page).tolist()]


def test_every_page_is_reachable_from_the_first_home_page(web):
    seen = np.zeros(web.num_pages, dtype=bool)
    start = web.find(web.seed_urls()[0])
    seen[start] = True
    queue = deque([start])
    while queue:
        for target in web.out_links(queue.popleft()).tolist():
            if not seen[target]:
                seen[target] = True
                queue.append(target)
    assert seen.all()


def test_urls_round_trip_and_strangers_are_not_found(web):
    for page in range(0, web.num_pages, 97):
        assert web.find(web.url(page)) == page
    home = web.url(0)
    assert home == "http://s0.gen.test/"
    some = web.url(5)
    for wrong in (some.replace(".html", ".htm"), some.replace("/p5", "/p05"), "http://s99999.gen.test/",
                  some.replace(some.split("/")[3], "private" if "private" not in some else "news"),
                  "http://s0.gen.test/news/p0.html", "http://elsewhere.test/"):
        assert web.find(wrong) is None, wrong


def test_sizes_from_ten_pages_up():
    tiny = GeneratedWeb("gen:10")
    assert tiny.num_pages == 10 and len(tiny.hosts) == 3
    assert all(tiny.find(tiny.url(p)) == p for p in range(10))


def test_write_links_and_labels(tmp_path):
    web = GeneratedWeb("gen:300,seed=2")
    write_links(web, tmp_path / "links.tsv.gz")
    graph = LinkGraph.load(tmp_path / "links.tsv.gz")
    for page in (0, 5, 299):
        source = graph.find(web.url(page))
        assert [graph.url(t) for t in graph.out_links(source).tolist()] == [web.url(t) for t in web.out_links(page).tolist()]
    web.write_labels(tmp_path / "labels.tsv")
    lines = (tmp_path / "labels.tsv").read_text().splitlines()
    assert lines[0] == "url\ttopical" and len(lines) == 301
    assert {line.split("\t")[0] for line in lines[1:] if line.endswith("\t1")} == web.topical_urls()


def test_robots_and_fault_subjects():
    web = GeneratedWeb("gen:2000,seed=1,robots=0.2,crawl_delay=2,faults=0.5")
    robots = web.robots()
    assert len(robots) == round(0.2 * len(web.hosts)) and "s0.gen.test" not in robots
    assert all(entry["text"] == "User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n" for entry in robots.values())
    rules = web.fault_rules()
    assert abs(sum(r["rate"] for r in rules) - 0.5) < 1e-9
    assert all(a["offset"] + a["rate"] == pytest.approx(b["offset"]) for a, b in zip(rules, rules[1:]))
    assert GeneratedWeb("gen:100").fault_rules() == [] and GeneratedWeb("gen:100").robots() == {}


def test_spec_errors():
    with pytest.raises(ValueError, match="unknown option"):
        GenSpec.parse("gen:100,colour=blue")
    with pytest.raises(ValueError):
        GenSpec.parse("gen:0")
    assert GenSpec.parse("gen:100,outdegree=3-4").outdegree_range == (3, 4)


@pytest.mark.parametrize("option, why", [
    ("pages=abc", "not an integer"), ("seed=x", "not an integer"), ("seed=-1", ">= 0"), ("hosts=-3", ">= 0"),
    ("alpha=-2", ">= 0"), ("alpha=inf", ">= 0"), ("crawl_delay=-5", ">= 0"), ("local=7", "between 0 and 1"),
    ("topic_share=1.5", "between 0 and 1"), ("topic_share=-0.5", "between 0 and 1"),
    ("locality=nan", "between 0 and 1"), ("robots=2", "between 0 and 1"), ("faults=3", "between 0 and 1"),
    ("outdegree=9-3", "LO-HI"), ("outdegree=-2", "LO-HI"), ("outdegree=a-b", "LO-HI"),
    ("domain=", "host name"), ("domain=a/b", "host name"), ("domain=-x.test", "host name")])
def test_spec_values_are_checked_and_the_option_named(option, why):
    spec = f"gen:{option.removeprefix('pages=')}" if option.startswith("pages=") else f"gen:100,{option}"
    with pytest.raises(ValueError) as error:
        GenSpec.parse(spec)
    assert str(error.value).startswith(f"{spec}: option {option}: ") and why in str(error.value)


def test_domain_is_case_insensitive():
    web = GeneratedWeb("gen:50,domain=Gen.Example")
    assert web.url(0) == "http://s0.gen.example/" and web.find("http://s0.gen.example/") == 0


def test_generated_fault_pages_are_served_with_faults():
    from crawlkit.replay.messages import Request
    from crawlkit.replay.urls import split_url
    from crawlkit.replay.web import load_web

    web = load_web(["gen:400,seed=1,faults=1"], changes="1:never")
    graph = web.sources[0].graph
    faults = []
    for page in range(graph.num_pages):
        url = graph.url(page)
        response = web.respond(Request("GET", url, *split_url(url), {}, ""))
        faults.append(response.fault)
        if url.endswith("/"):
            assert response.fault is None and response.status == 200  # home pages stay reachable
    kinds = {f for f in faults if f}
    assert kinds == {"status", "redirect", "delay", "type", "malformed", "charset", "encoding"}
    assert faults.count(None) == len(graph.hosts)
