"""`crawlkit evaluate` end to end on the crawl directory and tiny web of the other tests
(``--buffer``, which reads the crawldb with Spark: test_evaluate_crawldb_buffer.py)."""
from __future__ import annotations

import json

import pandas as pd

from crawlkit.cli import main
from crawlkit.evaluate import compare
from crawlkit.evaluate.report import COLUMNS


def test_cli_writes_csv_png_and_table(crawl_dir, access_log, web_files, tmp_path, capsys):
    links, labels = web_files
    out = tmp_path / "eval"
    code = main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(links),
                 "--access-log", str(access_log), "--hot", "indegree:1,indegree:2,pagerank:2",
                 "--labels", str(labels), "--topic", "course",
                 "--name", "bfs", "--out", str(out), "--quiet"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["pages_crawled"] == 6 and summary["web_pages"] == 8
    assert summary["crosscheck"]["log_only"] == 1

    curves = pd.read_csv(out / "bfs.csv")
    assert list(curves.columns) == COLUMNS
    assert set(curves["ordering"]) == {"bfs", "ideal", "random"}
    assert set(curves["metric"]) == {"P_ST", "P_CS", "harvest", "recall"}
    assert set(curves["hot_definition"]) == {"indegree>1", "indegree>2", "pagerank-top-2",
                                             "pagerank-top-K", "topic:course"}
    png = (out / "bfs.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    table = (out / "bfs.md").read_text(encoding="utf-8")
    assert "| measure | hot pages | ordering | 5% | 10% | 20% | 30% | 50% | end |" in table
    assert "## Cross-check with the access log" in table


def test_cli_default_out_dir_and_usage_errors(crawl_dir, web_files, capsys):
    assert main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(web_files[0]), "--quiet"]) == 0
    name = crawl_dir.name   # the ordering is named after the crawl directory
    assert (crawl_dir / "evaluation" / f"{name}.csv").exists()
    try:
        main(["evaluate", "--crawl-dir", str(crawl_dir), "--buffer", "0"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "expected a page count" in capsys.readouterr().err


def test_compare_two_orderings(crawl_dir, web_files, tmp_path):
    for name, hot in (("first", "indegree:1"), ("second", "indegree:1,indegree:2")):
        assert main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(web_files[0]),
                     "--hot", hot, "--name", name, "--out", str(tmp_path), "--quiet"]) == 0
    markdown, figure = compare([tmp_path / "first.csv", tmp_path / "second.csv"])
    rows = [line for line in markdown.splitlines() if line.startswith("| P_ST | indegree>1 |")]
    # both orderings, then ideal and random once (the copies of each crawl collapse)
    assert [row.split(" | ")[2] for row in rows] == ["first", "second", "ideal", "random"]
    assert "| P_ST | indegree>2 | second |" in markdown and "| P_ST | indegree>2 | first |" not in markdown
    assert len([ax for ax in figure.axes if ax.get_visible()]) == 3  # P_ST twice, P_CS


def test_ordinary_mistakes_are_one_line_errors_not_tracebacks(crawl_dir, web_files, tmp_path, capsys):
    links, labels = web_files
    for extra, message in ((["--labels", str(labels), "--topic", "Course"], "no page is labelled 'Course'"),
                           (["--hot", "indegree:x"], "crawlkit evaluate: ")):
        try:
            main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(links), "--out", str(tmp_path),
                  "--quiet", *extra])
            raise AssertionError("no error")
        except SystemExit as exc:
            assert message in str(exc.code), exc.code


def test_the_crosscheck_of_one_common_page_is_json(tmp_path):
    from crawlkit.evaluate.crosscheck import CrossCheck
    summary = CrossCheck(log_only=[], segments_only=[], common=1, order_agreement=float("nan")).summary()
    assert json.loads(json.dumps(summary, allow_nan=False))["order_agreement"] is None


def test_cli_ranks_the_web_by_scoring_importance_for_p_cs(crawl_dir, web_files, tmp_path, capsys):
    # in-links rank b and h equal (1 each), where PageRank puts b ahead: the 4th most
    # important page is then one of five pages at least that important, not four
    for importance, at_least_4th in (("pagerank", 4), ("backlinks", 5)):
        assert main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(web_files[0]),
                     "--name", importance, "--out", str(tmp_path), "--quiet",
                     "--conf", f"scoring.importance={importance}"]) == 0
        curves = pd.read_csv(tmp_path / f"{importance}.csv")
        cs = curves[(curves.metric == "P_CS") & (curves.ordering == "random")]
        assert set(cs["hot_definition"]) == {f"{importance}-top-K"}
        assert cs[cs.pages_crawled == 4]["value"].iloc[0] == at_least_4th / 8
    assert main(["evaluate", "--crawl-dir", str(crawl_dir), "--web", str(web_files[0]), "--quiet",
                 "--conf", "scoring.importance=opic"]) == 2    # a configuration error, before any work
    assert "scoring.importance must be one of pagerank, backlinks, got 'opic'" in capsys.readouterr().err
