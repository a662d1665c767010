"""The crawl report: its data from the small crawl, and the page as headless Chromium shows it."""
import io
import json

import pytest
from PIL import Image

from chromium_cdp import Chromium, find_chromium
from smallcrawl import NOW, SEG1, SEG2, STATS

from crawlkit.cli import main
from crawlkit.report import collect, render


@pytest.fixture(scope="module")
def data(spark, small_crawl):
    from crawlkit.conf import make_conf
    return collect(spark, small_crawl, make_conf(crawl__dir=small_crawl), NOW)


def test_the_timeline_reads_the_segments_stats_and_content(data):
    assert data["rounds"] == [
        {"segment": SEG1, "generated": 4, "fetch_by_status": {"not_found": 1, "retry": 1, "success": 2},
         "fetched": 2, "outcomes": 4, "bytes": 2000, "parsed": 2, "new_urls": 2,
         "seconds": {"generate": 1.5, "fetch": 12.25, "parse": 2.0, "updatedb": 3.5, "score": 4.0},
         "options": {"crawl.topN": 4}, "stats": STATS[SEG1]},
        # round 2 was fetched but never parsed or applied: what is there is shown
        {"segment": SEG2, "generated": 2, "fetch_by_status": {"not_modified": 1, "retry": 1},
         "fetched": 1, "outcomes": 2, "bytes": 0, "parsed": None, "new_urls": None, "seconds": {}, "options": None,
         "stats": STATS[SEG2]},
    ]


def test_hosts_with_errors_components_and_evaluation(data):
    assert data["host_errors"] == [
        {"host": "b.test", "fetches": 3, "errors": 3, "mean_ms": 300.0,
         "by_status": {"not_found": 1, "retry": 2}, "top_error": "HTTP 500"}]   # a tie: alphabetical
    # ten bins per decade in the report: bin = floor(10 log10(score))
    assert [(c["component"], c["bin"], c["count"]) for c in data["score_components"]] == [
        ("backlinks", 0, 2), ("backlinks", 4, 1),              # 1.0 twice, 3.0 once
        ("pagerank", -10, 1), ("pagerank", -7, 1), ("pagerank", -4, 1)]   # 0.1, 0.2, 0.4
    assert len(data["evaluation"]) == 9
    assert data["evaluation"][0] == {"fraction_crawled": 0.25, "metric": "P_ST", "ordering": "pagerank",
                                     "value": 0.5, "hot_definition": "top 10%", "file": "pagerank.csv"}
    assert [p["url"] for p in data["top"][:2]] == ["http://a.test/", "http://c.test/"]


def test_the_cli_writes_the_report_of_an_older_version(spark, small_crawl, tmp_path, capsys):
    out = tmp_path / "v2.html"
    assert main(["report", "--crawl-dir", small_crawl, "--version", "2", "--out", str(out), "--quiet",
                 "--now", NOW.isoformat(), "--conf", f"spark.checkpoint_dir={spark.sparkContext.getCheckpointDir()}",
                 "--conf", "spark.shuffle_partitions=2"]) == 0
    counters = json.loads(capsys.readouterr().out)
    assert counters == {"report": str(out), "bytes": len(out.read_bytes()), "rounds": 1,
                        "crawldb_version": 2, "linkdb_version": 0}
    html = out.read_text()
    assert SEG1 in html and SEG2 not in html                  # round 2 was generated after version 2


def test_an_older_version_shows_only_what_had_happened_by_then(spark, small_crawl):
    from crawlkit.conf import make_conf
    conf = make_conf(crawl__dir=small_crawl)
    generated_only = collect(spark, small_crawl, conf, NOW, version=2)["rounds"]
    # version 2 is round 1's fetch list: its fetch, parse and updatedb came after
    assert generated_only == [
        {"segment": SEG1, "generated": 4, "fetch_by_status": {}, "fetched": 0, "outcomes": 0,
         "bytes": None, "parsed": None, "new_urls": None, "seconds": {}, "options": None,
         "stats": {"generate": STATS[SEG1]["generate"]}}]
    applied = collect(spark, small_crawl, conf, NOW, version=3)["rounds"]
    assert [(r["segment"], r["outcomes"], r["new_urls"]) for r in applied] == [(SEG1, 4, 2)]


def test_the_page_is_self_contained_and_renders_without_errors(data, tmp_path):
    browser = find_chromium()
    if browser is None:
        pytest.skip("chromium is not installed (scripts/setup.sh installs it when CI=true)")
    page = tmp_path / "report.html"
    html = render(data)
    page.write_text(html)
    assert "<script" not in html and "<link" not in html     # nothing to fetch, nothing to run
    chromium = Chromium(browser, str(tmp_path / "profile"), str(tmp_path / "chromium.log"))
    try:
        loaded = chromium.load(page.as_uri(), width=1200, height=2000)
    finally:
        chromium.close()
    assert loaded.errors == []
    assert loaded.requests == [page.as_uri()]                 # no external assets
    # rounds: fetch outcomes and stage durations; scores: by status and components; 2 evaluation plots
    assert loaded.svg_count == 6
    (tmp_path / "report.png").write_bytes(loaded.screenshot)
    image = Image.open(io.BytesIO(loaded.screenshot)).convert("RGB")
    assert image.size == (1200, 2000)
    colours = image.getcolors(maxcolors=1 << 16) or []
    assert len(colours) > 50                                  # not blank: text, bars, lines
    white = max(count for count, colour in colours if colour == (255, 255, 255))
    assert white < 0.95 * 1200 * 2000
