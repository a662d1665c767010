"""Bad input at the command line: a seeds file full of bad lines, configuration files with
errors. Line-level parsing of seeds is unit-tested in tests/unit/test_inject.py and the
configuration checks in tests/unit/test_conf.py; here the `crawlkit` command itself runs in a
subprocess, as an operator would run it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = ["http://good1.test/", "http://good2.test/a score=2", "https://good3.test/b  topic=x"]
# (line content, words the report of that line must contain)
BAD = [
    (b"not a url", "invalid URL"),
    (b"ftp://files.test/pub/x", "scheme"),
    (b"mailto:someone@example.com", ""),
    (b"javascript:alert(1)", ""),
    (b"http://" + b"x" * 10000 + b".test/", "longer than"),
    (b"http://caf\xe9.test/", "not UTF-8"),
    (b"\xff\xfe\x00h\x00t\x00t\x00p", "not UTF-8"),
    (b"http://ok.test/ score=lots", "score"),
    (b"http://ok.test/ justaword", "key=value"),
    (b"http://", "invalid URL"),
]


def crawlkit(*args, timeout=600, env=None):
    return subprocess.run([sys.executable, "-m", "crawlkit.cli", *args], cwd=ROOT,
                          capture_output=True, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_inject_reports_each_bad_line_by_number_and_injects_the_rest(tmp_path):
    lines, expected_bad = [], {}
    for i, url in enumerate(GOOD):
        lines.append(url.encode())
        lines.append(BAD[i][0])
        expected_bad[len(lines)] = BAD[i][1]
    for content, words in BAD[len(GOOD):]:
        lines.append(content)
        expected_bad[len(lines)] = words
    lines.append(b"# a comment")
    lines.append(b"")
    lines.append(b"http://GOOD1.test/#again")       # the first line's URL once normalized
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\n".join(lines) + b"\n")
    crawl_dir = tmp_path / "crawl"
    result = crawlkit("inject", "--seeds", str(seeds), "--crawl-dir", str(crawl_dir), "--update",
                      "--master", "local[1]", "--now", "2026-01-01T00:00:00",
                      "--conf", "spark.shuffle_partitions=1")
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr[-3000:]
    counters = json.loads(result.stdout.decode().strip().splitlines()[-1])
    assert counters["injected"] == len(GOOD)
    assert counters["bad_lines"] == len(BAD)
    assert (counters["repeated_lines"], counters["updated"]) == (1, 0)
    report_lines = [l for l in stderr.splitlines() if l.startswith("seeds ")]
    assert len(report_lines) == len(BAD) + 1, report_lines
    assert f"seeds line {len(lines)}: the URL of line 1 again (line 1 kept)" in report_lines
    for number, words in expected_bad.items():
        line = next((l for l in report_lines if l.startswith(f"seeds line {number}: ")), None)
        assert line is not None, (number, report_lines)
        assert words in line, (number, line)
    # an enormous line is reported, not echoed
    assert max(len(l) for l in report_lines) < 1000


SITE_ERRORS = [
    # (site file text, key named in the message)
    ('[fetcher]\nthreadz = 4\n', "fetcher.threadz"),
    ('[fetcher]\nthreads = "many"\n', "fetcher.threads"),
    ('[nosuchsection]\nx = 1\n', "nosuchsection"),
    ('[fetcher]\nthreads = 4\nthreads = 5\n', None),           # TOML error: the file is named
    ('[fetcher\nthreads = 4\n', None),
]


@pytest.mark.parametrize("text,key", SITE_ERRORS, ids=["unknown key", "wrong type", "unknown section",
                                                        "duplicate key", "syntax"])
def test_configuration_file_errors_give_one_clear_message_and_exit_2(tmp_path, text, key):
    site = tmp_path / "bad-site.toml"
    site.write_text(text)
    result = crawlkit("generate", "--site", str(site), "--crawl-dir", str(tmp_path / "crawl"),
                      timeout=120)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    errors = [l for l in stderr.splitlines() if "configuration error" in l]
    assert len(errors) == 1, stderr
    assert str(site) in errors[0]
    if key:
        assert key in errors[0]
    assert "Traceback" not in stderr
    assert not (tmp_path / "crawl").exists(), "nothing may be written on a configuration error"


@pytest.mark.parametrize("assignment,key", [("fetcher.threadz=4", "fetcher.threadz"),
                                            ("fetcher.threads=many", "fetcher.threads")])
def test_command_line_conf_errors_name_the_key_and_exit_2(tmp_path, assignment, key):
    result = crawlkit("generate", "--conf", assignment, "--crawl-dir", str(tmp_path / "crawl"),
                      timeout=120)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert key in stderr and "configuration error" in stderr and "Traceback" not in stderr


def test_site_file_from_environment_is_named_in_the_error(tmp_path):
    site = tmp_path / "env-site.toml"
    site.write_text("[db]\nretry_maximum = 3\n")
    result = crawlkit("generate", "--crawl-dir", str(tmp_path / "crawl"),
                      env={"CRAWLKIT_SITE": str(site)}, timeout=120)
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert "db.retry_maximum" in stderr and str(site) in stderr
