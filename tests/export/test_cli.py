"""`crawlkit export` on the command line: default output directory, counters, refusals. (The
jsonl export of the shared crawl is made by the command line, see conftest.exported.)"""
import pytest

from exporthelpers import PAGES, cli_export


def test_export_writes_the_default_directory_with_its_counters(exported, shared_crawl):
    out, counters = exported["jsonl"]
    assert counters["out"] == f"{shared_crawl.dir}/exports/jsonl-v1" == str(out)
    assert (counters["format"], counters["boost"], counters["records"]) == ("jsonl", "log", len(PAGES))


def test_export_refuses_a_bad_version_and_a_foreign_directory(shared_crawl, tmp_path):
    with pytest.raises(SystemExit, match="since-version must be between 0 and the crawldb version 1"):
        cli_export(shared_crawl.dir, "--since-version", "5")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(SystemExit, match="not an export directory"):
        cli_export(shared_crawl.dir, "--out", str(foreign))
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert cli_export(shared_crawl.dir, "--format", "xml") == 2


def test_a_score_no_page_has_is_a_configuration_error(shared_crawl, capsys):
    # a typo would give every page the same minimal boost, and the index no ranking
    assert cli_export(shared_crawl.dir, "--conf", "export.score=pagernk") == 2
    error = capsys.readouterr().err
    assert "export.score = 'pagernk'" in error and "opic, pagerank" in error
