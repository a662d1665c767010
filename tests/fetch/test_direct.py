"""Direct connections (no proxy) to a local server: the SSRF guard at connect time, and the
request headers the fetcher sends."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fetch_helpers import NOW, fetch_row

from crawlkit.conf import make_conf
from crawlkit.fetch import fetch_partition


class Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list = []

    def do_GET(self):
        self.seen.append((self.path, dict(self.headers)))
        if self.path == "/robots.txt":
            body, status = b"User-agent: *\nDisallow: /no/\n", 200
        elif self.path == "/big-headers":
            self.send_response(200)
            for i in range(40):
                self.send_header(f"X-Filler-{i}", "x" * 100)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        else:
            body, status = b"<html>hello</html>", 200
        self.send_response(status)
        self.send_header("Content-Type", "text/html" if status == 200 else "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def origin():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(urls, **conf):
    options = dict(fetcher__server_delay=0.0, fetcher__threads=2, fetcher__page_deadline=5.0)
    options.update(conf)
    rows = [fetch_row(url) if isinstance(url, str) else url for url in urls]
    return {r["url"]: r for r in fetch_partition(rows, make_conf(**options), NOW)}


def test_loopback_is_blocked_without_connecting(origin):
    Recorder.seen.clear()
    results = run([f"{origin}/a", f"{origin}/b"])
    assert {r["fetch_status"] for r in results.values()} == {"blocked"}
    assert results[f"{origin}/a"]["error"] == "blocked address 127.0.0.1"
    assert Recorder.seen == []


def test_allow_private_lets_the_local_server_through(origin):
    Recorder.seen.clear()
    row = fetch_row(f"{origin}/page", etag='"v1"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT")
    results = run([row, f"{origin}/no/x"], fetcher__allow_private=["127.0.0.0/8"],
                  fetcher__user_agent="testbot/1.0")
    assert results[f"{origin}/page"]["fetch_status"] == "success"
    assert results[f"{origin}/page"]["content"] == b"<html>hello</html>"
    assert results[f"{origin}/no/x"]["fetch_status"] == "robots_denied"
    paths = [path for path, _ in Recorder.seen]
    assert paths == ["/robots.txt", "/page"]
    headers = Recorder.seen[1][1]
    assert headers["User-Agent"] == "testbot/1.0"
    assert headers["If-None-Match"] == '"v1"'
    assert headers["If-Modified-Since"] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert headers["Accept-Encoding"] == "gzip, deflate"


def test_oversized_headers_are_refused(origin):
    results = run([f"{origin}/big-headers"], fetcher__allow_private=["127.0.0.1/32"],
                  fetcher__max_header_bytes=2000, fetcher__respect_robots=False)
    result = results[f"{origin}/big-headers"]
    assert result["fetch_status"] == "retry" and result["error"] == "headers too large"


def test_unreachable_port_is_a_transient_failure():
    results = run(["http://127.0.0.1:9/x"], fetcher__allow_private=["127.0.0.1/32"],
                  fetcher__respect_robots=False)
    result = results["http://127.0.0.1:9/x"]
    assert result["fetch_status"] == "retry" and result["error"] == "connection refused"


def test_invalid_urls_are_final(origin):
    results = run(["ftp://files.test/x", "http:///nohost", "http://bad host.test/"],
                  fetcher__respect_robots=False)
    assert {r["fetch_status"] for r in results.values()} == {"access_denied"}
    assert all(r["error"].startswith("invalid url") for r in results.values())
