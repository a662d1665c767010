"""``ReplayServer``: the replay web in a subprocess, for tests, demos and benchmarks.

A subprocess, not a thread, so the server gets its own interpreter (and GIL): a
crawler under test runs at full speed, and the server can be killed like any
real site. The server binds a free port itself and reports it through a ready
file, so there is no race between choosing a port and binding it.

The server must not outlive its owner: it reads a pipe from this process and stops
at EOF, which the kernel delivers whenever this process ends (even by SIGKILL),
and an object collected without ``stop()`` stops its server.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

import crawlkit

from .accesslog import read_access_log
from .server import CONTROL_HOST


class ReplayServer:
    """Start with :meth:`start` or ``with``; the server stops at :meth:`stop` or the end of the block.

    ``faults`` and ``robots`` are file paths or the parsed content (a list of rule
    tables; a host -> entry mapping), which is then written to ``workdir`` as JSON.
    Without ``workdir`` a temporary folder is used, removed when this object is
    garbage-collected (not at ``stop``, so the access log can still be read). A reused
    ``workdir``'s access log starts afresh, unless ``keep_log`` (a crawl continued under a new
    server, whose whole log is read afterwards).
    """

    def __init__(self, sources: Sequence[str | os.PathLike], *, workdir: str | os.PathLike | None = None,
                 faults: str | os.PathLike | list[dict] | None = None,
                 robots: str | os.PathLike | dict | None = None, site: str | None = None,
                 changes: str | None = None, seed: int = 0, clock: float = 0.0,
                 extra_args: Sequence[str] = (), ready_timeout: float = 120.0, keep_log: bool = False):
        self.sources = [str(s) for s in sources]
        self._own_workdir = None if workdir else tempfile.TemporaryDirectory(prefix="replay-")
        self.workdir = Path(workdir or self._own_workdir.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.faults, self.robots, self.site = faults, robots, site
        self.changes, self.seed, self.initial_clock = changes, seed, clock
        self.extra_args = list(extra_args)
        self.ready_timeout = ready_timeout
        self.keep_log = keep_log
        self.access_log_path = self.workdir / "access.jsonl"
        self.server_log_path = self.workdir / "server.log"
        self.port: int | None = None
        self._process: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def command(self) -> list[str]:
        ready = self.workdir / "ready"
        args = [sys.executable, "-m", "crawlkit.replay", *self.sources, "--port", "0", "--ready-file", str(ready),
                "--access-log", str(self.access_log_path), "--seed", str(self.seed),
                "--clock-start", repr(float(self.initial_clock)), "--stop-on-eof"]
        for flag, value, name in (("--faults", self.faults, "faults.json"), ("--robots", self.robots, "robots.json")):
            if value is not None:
                args += [flag, str(self._as_file(value, name))]
        if self.site:
            args += ["--site", self.site]
        if self.changes:
            args += ["--changes", self.changes]
        return args + self.extra_args

    def _as_file(self, value, name: str) -> Path:
        if isinstance(value, (str, os.PathLike)):
            return Path(value)
        path = self.workdir / name
        path.write_text(json.dumps(value, indent=1))
        return path

    def start(self) -> ReplayServer:
        ready = self.workdir / "ready"
        ready.unlink(missing_ok=True)
        if not self.keep_log:   # access_log() is this run's, even in a reused workdir
            self.access_log_path.unlink(missing_ok=True)
        env = dict(os.environ)
        package_root = str(Path(crawlkit.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        with open(self.server_log_path, "ab") as log:
            self._process = subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=log,
                                             stderr=subprocess.STDOUT, env=env)
        self._finalizer = weakref.finalize(self, _terminate, self._process)
        deadline = time.monotonic() + self.ready_timeout
        while not ready.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"replay server did not start:\n{self.server_log_path.read_text()[-3000:]}")
            time.sleep(0.02)
        self.port = int(ready.read_text())
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (the server flushes its log and exits), then SIGKILL if it lingers; always reaped."""
        process, self._process = self._process, None
        if self._finalizer is not None:
            self._finalizer.detach()
        if process is not None:
            _terminate(process, timeout)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def __enter__(self) -> ReplayServer:
        return self if self.running else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- use -----------------------------------------------------------------------------------

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def proxies(self) -> dict[str, str]:
        """For ``requests``: ``requests.get(url, proxies=server.proxies)``."""
        return {"http": self.proxy_url}

    def control(self, method: str, path: str, **params) -> dict:
        """Call a control endpoint (``http://replay.control/PATH``) and return its JSON answer."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            query = f"?{urlencode(params)}" if params else ""
            connection.request(method, f"http://{CONTROL_HOST}{path}{query}")
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"control {path}: {response.status} {body.decode(errors='replace')}")
            return json.loads(body)
        finally:
            connection.close()

    def set_clock(self, t: float) -> None:
        """Set the replay clock (seconds); requests after this call see pages as of ``t``."""
        self.control("POST", "/clock", t=repr(float(t)))

    def clock(self) -> float:
        return self.control("GET", "/clock")["clock"]

    def page_info(self, url: str) -> dict:
        """Ground truth for ``url`` at the current clock: source, change interval and times, version, links."""
        return self.control("GET", "/page", url=url)

    def access_log(self) -> list[dict]:
        """Every request logged so far, in order of arrival (the server flushes first)."""
        if self.running:
            self.control("POST", "/flush")
        if not self.access_log_path.exists():
            return []
        return read_access_log(self.access_log_path)


def _terminate(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """Stop and reap ``process``; a module function so that a finalizer need not hold the server object."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdin is not None:
        process.stdin.close()
