"""The server itself: proxy and origin modes, keep-alive, concurrency, the access log, control, life cycle."""

from __future__ import annotations

import concurrent.futures
import gc
import os
import socket
import subprocess
import sys
import time

import psutil
import pytest
import requests

from crawlkit.replay import GeneratedWeb, ReplayServer, read_access_log
from crawlkit.replay.cli import main

from .conftest import raw_exchange, split_response

SPEC = "gen:300,seed=6"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ReplayServer([SPEC], workdir=tmp_path_factory.mktemp("server")) as server:
        yield server


def test_origin_form_uses_the_host_header(server):
    data = raw_exchange(server.port, b"GET / HTTP/1.1\r\nHost: s1.gen.test\r\nConnection: close\r\n\r\n")
    status, _, _, body = split_response(data)
    assert status == 200 and body == requests.get("http://s1.gen.test/", proxies=server.proxies).content


def test_site_option_serves_one_site(replay_factory):
    site = replay_factory([SPEC], site="s0.gen.test")
    direct = requests.get(f"http://127.0.0.1:{site.port}/")
    assert direct.status_code == 200
    assert direct.content == requests.get("http://s0.gen.test/", proxies=site.proxies).content


def test_keep_alive_many_requests_on_one_connection(server):
    web = GeneratedWeb(SPEC)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        stream = sock.makefile("rb")
        for page in range(20):
            sock.sendall(f"GET {web.url(page)} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            status_line = stream.readline()
            length = 0
            while (line := stream.readline()) != b"\r\n":
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert status_line.startswith(b"HTTP/1.1 200") and len(stream.read(length)) == length


def test_pipelined_requests(server):
    request = b"GET http://s0.gen.test/ HTTP/1.1\r\nHost: s0.gen.test\r\n\r\n"
    data = raw_exchange(server.port, request * 3 + request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert data.count(b"HTTP/1.1 200 OK") == 4


def test_concurrent_clients(server):
    web = GeneratedWeb(SPEC)

    def fetch(page: int) -> int:
        return requests.get(web.url(page), proxies=server.proxies, timeout=10).status_code

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        assert set(pool.map(fetch, range(300))) == {200}


def test_head_method_and_others(server):
    head = requests.head("http://s0.gen.test/", proxies=server.proxies)
    assert head.status_code == 200 and int(head.headers["Content-Length"]) > 0 and head.content == b""
    assert requests.post("http://s0.gen.test/", data=b"x", proxies=server.proxies).status_code == 405
    status, *_ = split_response(raw_exchange(server.port, b"CONNECT s0.gen.test:443 HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert status == 501
    status, *_ = split_response(raw_exchange(server.port, b"NONSENSE\r\n\r\n"))
    assert status == 400


def test_access_log_records_what_was_asked(replay_factory):
    server = replay_factory([SPEC], clock=42.0)
    urls = ["http://s0.gen.test/", "http://s0.gen.test/robots.txt", "http://nowhere.test/x",
            "http://s1.gen.test/__trap/status/503", "http://s0.gen.test/"]
    responses = [requests.get(u, proxies=server.proxies) for u in urls]
    log = server.access_log()
    assert [r["url"] for r in log] == urls
    assert [r["status"] for r in log] == [200, 404, 404, 503, 200]
    assert [r["bytes"] for r in log] == [len(r.content) for r in responses]
    assert [r["host"] for r in log] == ["s0.gen.test", "s0.gen.test", "nowhere.test", "s1.gen.test", "s0.gen.test"]
    assert log[3]["fault"] == "status" and "fault" not in log[0]
    assert all(r["clock"] == 42.0 and r["method"] == "GET" and r["duration"] >= 0 for r in log)
    assert [r["ts"] for r in log] == sorted(r["ts"] for r in log) and log[-1]["ts"] - log[0]["ts"] < 5
    assert all(r["client"].startswith("127.0.0.1:") for r in log)


def test_access_log_starts_afresh_in_a_reused_workdir(tmp_path):
    for run in ("first", "second"):
        with ReplayServer([SPEC], workdir=tmp_path) as server:
            requests.get(f"http://s0.gen.test/?{run}", proxies=server.proxies)
            assert [r["url"] for r in server.access_log()] == [f"http://s0.gen.test/?{run}"]
    with ReplayServer([SPEC], workdir=tmp_path, keep_log=True) as server:   # a continued crawl's log
        requests.get("http://s0.gen.test/?third", proxies=server.proxies)
        assert [r["url"] for r in server.access_log()] == ["http://s0.gen.test/?second", "http://s0.gen.test/?third"]


def test_access_log_is_flushed_without_asking(replay_factory):
    server = replay_factory([SPEC])
    requests.get("http://s0.gen.test/", proxies=server.proxies)
    deadline = time.monotonic() + 5
    while not server.access_log_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert time.monotonic() < deadline  # written within a few flush intervals
    assert len(read_access_log(server.access_log_path)) == 1


def test_access_log_gaps_between_requests(replay_factory):
    server = replay_factory([SPEC])
    for _ in range(3):
        requests.get("http://s0.gen.test/", proxies=server.proxies)
        time.sleep(0.2)
    times = [r["ts"] for r in server.access_log()]
    assert all(0.19 < b - a < 3.0 for a, b in zip(times, times[1:]))


def test_stop_flushes_the_log_and_leaves_no_process(tmp_path):
    server = ReplayServer([SPEC], workdir=tmp_path).start()
    pid = server.pid
    requests.get("http://s0.gen.test/", proxies=server.proxies)
    server.stop()
    assert not psutil.pid_exists(pid) and not server.running  # exited and reaped: no zombie
    assert len(read_access_log(server.access_log_path)) == 1
    with pytest.raises(requests.ConnectionError):
        requests.get("http://s0.gen.test/", proxies={"http": server.proxy_url}, timeout=2)


def _gone(pid: int) -> bool:
    """True once ``pid`` has exited (an orphan's zombie waits for init to reap it: gone too)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("ending", ["os.kill(os.getpid(), signal.SIGKILL)", "os._exit(0)", "pass"])
def test_server_dies_with_its_parent(tmp_path, ending):
    parent = ("import os, signal, sys\n"
              "from crawlkit.replay import ReplayServer\n"
              f"server = ReplayServer(['{SPEC}'], workdir=sys.argv[1]).start()\n"
              "print(server.pid, flush=True)\n" + ending + "\n")
    run = subprocess.run([sys.executable, "-c", parent, str(tmp_path)], capture_output=True, text=True, timeout=120)
    pid = int(run.stdout.split()[0])
    deadline = time.monotonic() + 15
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not _gone(pid):
        psutil.Process(pid).kill()
        pytest.fail(f"the server outlived its parent ({ending})")


def test_collected_server_object_stops_its_server(tmp_path):
    server = ReplayServer([SPEC], workdir=tmp_path).start()
    pid = server.pid
    del server
    gc.collect()
    assert not psutil.pid_exists(pid)  # stopped and reaped by the finalizer, not left to the pipe's EOF


def test_control_shutdown(tmp_path):
    server = ReplayServer([SPEC], workdir=tmp_path).start()
    assert server.control("GET", "/health") == {"ok": True}
    pid = server.pid
    server.control("POST", "/shutdown")
    deadline = time.monotonic() + 10
    while server.running and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not server.running
    server.stop()
    assert not psutil.pid_exists(pid)


def test_start_failure_is_reported(tmp_path):
    with pytest.raises(RuntimeError, match="not a source"):
        ReplayServer(["no-such-source.txt"], workdir=tmp_path).start()


def test_control_errors(server):
    with pytest.raises(RuntimeError, match="400"):
        server.control("POST", "/clock", t="soon")
    with pytest.raises(RuntimeError, match="404"):
        server.control("GET", "/nothing")
    assert server.page_info("http://nowhere.test/")["source"] is None


def test_cli_writes_a_generated_web(tmp_path):
    assert main(["gen:50,seed=1", "--write-links", str(tmp_path / "l.tsv.gz"), "--write-labels", str(tmp_path / "t.tsv")]) == 0
    assert (tmp_path / "l.tsv.gz").stat().st_size > 0 and len((tmp_path / "t.tsv").read_text().splitlines()) == 51
    assert main(["x.warc.gz", "y.tsv", "--write-links", str(tmp_path / "z.tsv")]) == 2


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "crawlkit.replay", "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--faults" in result.stdout and "--access-log" in result.stdout


def test_stop_on_eof_without_a_pipe_serves_anyway(tmp_path):
    """nohup or a script's background job gives the server /dev/null as stdin: there is no
    owner to watch, and the flag must not stop it from serving (it exited with an error)."""
    ready = tmp_path / "ready"
    with open(os.devnull, "rb") as null:
        process = subprocess.Popen([sys.executable, "-m", "crawlkit.replay", SPEC, "--port", "0",
                                    "--ready-file", str(ready), "--stop-on-eof"],
                                   stdin=null, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process.poll() is None and ready.exists()
        port = int(ready.read_text())
        proxies = {"http": f"http://127.0.0.1:{port}"}
        assert requests.get("http://s0.gen.test/", proxies=proxies, timeout=10).status_code == 200
    finally:
        process.terminate()
        assert b"needs stdin to be a pipe; ignored" in process.communicate(timeout=30)[1]
