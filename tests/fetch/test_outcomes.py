"""Status mapping, Retry-After and the content row shape: pure functions, no server."""
import json
from datetime import datetime

import pytest

from crawlkit.fetch.outcomes import make_row, media_type, parse_retry_after, status_for_code
from crawlkit.paths import schemas_dir
from crawlkit.status import FetchStatus as S

from fetch_helpers import fetch_row


@pytest.mark.parametrize("code, status", [
    (200, S.SUCCESS), (203, S.SUCCESS), (206, S.SUCCESS), (304, S.NOT_MODIFIED),
    (301, S.REDIRECT_PERM), (308, S.REDIRECT_PERM), (302, S.REDIRECT_TEMP),
    (303, S.REDIRECT_TEMP), (307, S.REDIRECT_TEMP), (300, S.REDIRECT_TEMP),
    (404, S.NOT_FOUND), (410, S.GONE), (401, S.ACCESS_DENIED), (403, S.ACCESS_DENIED),
    (400, S.ACCESS_DENIED), (451, S.ACCESS_DENIED), (429, S.RETRY), (500, S.RETRY),
    (502, S.RETRY), (503, S.RETRY), (599, S.RETRY), (102, S.RETRY),
])
def test_status_mapping(code, status):
    assert status_for_code(code) is status


def test_retry_after_seconds_and_cap():
    now = datetime(2024, 1, 1)
    assert parse_retry_after("120", now, 3600) == 120
    assert parse_retry_after(" 7 ", now, 3600) == 7
    assert parse_retry_after("99999", now, 3600) == 3600
    assert parse_retry_after(None, now, 3600) is None
    assert parse_retry_after("soon", now, 3600) is None
    assert parse_retry_after("-5", now, 3600) is None


def test_retry_after_http_date_counts_from_the_time_given():
    now = datetime(2024, 1, 1, 0, 0, 0)
    assert parse_retry_after("Mon, 01 Jan 2024 00:02:00 GMT", now, 3600) == 120
    assert parse_retry_after("Sun, 31 Dec 2023 23:00:00 GMT", now, 3600) == 0
    assert parse_retry_after("Tue, 02 Jan 2024 00:00:00 GMT", now, 3600) == 3600


def test_media_type():
    assert media_type("Text/HTML; charset=UTF-8") == "text/html"
    assert media_type("application/xhtml+xml") == "application/xhtml+xml"
    assert media_type("") is None
    assert media_type(None) is None


def test_row_has_exactly_the_content_columns():
    schema = json.loads((schemas_dir() / "content.json").read_text())
    columns = [column["name"] for column in schema["columns"]]
    row = make_row(fetch_row("http://a.test/"), "a.test", S.SKIPPED, error="time limit")
    assert list(row) == columns
    assert row["fetch_status"] == "skipped" and row["truncated"] is False
    assert row["segment"] == "20240101000000" and isinstance(row["fetched_at"], datetime)
    assert row["fetched_at"].tzinfo is None
