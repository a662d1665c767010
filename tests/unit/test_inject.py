"""Seed lines: normalized, filtered, deduplicated; each bad line reported with its number."""
from crawlkit.conf import make_conf
from crawlkit.stages.inject import parse_seed_lines


def test_good_and_bad_seed_lines():
    lines = [
        b"http://Example.COM:80/a/../b#frag",            # 1 normalized
        b"  https://example.org/  score=2.5  topic=sports",  # 2 score and metadata
        b"# a comment line",                             # 3
        b"",                                             # 4 blank
        b"ftp://example.net/file",                       # 5 unsupported scheme
        b"not a url",                                    # 6 invalid
        b"http://example.com/b",                         # 7 duplicate of line 1 after normalization
        b"http://caf\xe9.example/",                      # 8 not UTF-8
        b"http://example.com/" + b"x" * 9000,            # 9 enormous line
        b"http://example.com/ok score=high",             # 10 bad score
        b"http://example.com/ok2 justaword",             # 11 field without '='
        b"http://example.com/ok3 # trailing comment",    # 12 comment after the URL
        b"http://example.com/logo.png",                  # 13 excluded by the default filter
    ]
    report = parse_seed_lines(lines, make_conf())
    assert [(s.url, s.score, s.metadata) for s in report.seeds] == [
        ("http://example.com/b", None, {}),
        ("https://example.org/", 2.5, {"topic": "sports"}),
        ("http://example.com/ok3", None, {}),
    ]
    assert [n for n, _ in report.errors] == [5, 6, 8, 9, 10, 11, 13]
    assert report.repeats == [(7, 1)]                     # reported, the first line kept
    reasons = dict(report.errors)
    assert "scheme" in reasons[5]
    assert "not UTF-8" in reasons[8]
    assert "longer than 8192" in reasons[9]
    assert "excluded" in reasons[13]


def test_a_score_must_be_finite():
    report = parse_seed_lines([b"http://a.test/ score=1e400", b"http://b.test/ score=inf",
                               b"http://c.test/ score=nan", b"http://d.test/ score=1e300"], make_conf())
    assert [n for n, _ in report.errors] == [1, 2, 3]
    assert [(s.url, s.score) for s in report.seeds] == [("http://d.test/", 1e300)]
