"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

Why a pipe: no websocket client and no port to find or race for; Chromium reads commands
from fd 3 and writes replies and events to fd 4, NUL-terminated JSON. The page's console
messages, uncaught exceptions, log entries (failed loads, blocked content) and every network
request come back as structured events, so "no console errors" and "no external assets"
are checked exactly rather than by grepping logs.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


def find_chromium() -> str | None:
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageLoad:
    """What happened while a page loaded."""
    requests: list[str] = field(default_factory=list)      # every URL the page asked for
    errors: list[str] = field(default_factory=list)        # console errors, exceptions, error log entries
    svg_count: int = 0
    screenshot: bytes = b""                                 # PNG of the viewport


class Chromium:
    def __init__(self, binary: str, user_data_dir: str, log_path: str):
        to_chrome_read, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_write = os.pipe()

        def child_fds():  # move the pipe ends to fds 3 and 4, whatever numbers they had
            read_end, write_end = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_read, from_chrome_write))
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [binary, *FLAGS, f"--user-data-dir={user_data_dir}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=child_fds, close_fds=False)
        os.close(to_chrome_read)
        os.close(from_chrome_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (OSError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        """Send one command and wait for its reply; events seen meanwhile go to ``events``."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        while True:
            event = self._receive(timeout)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _receive(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("no message from chromium")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise OSError("chromium closed the pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def load(self, url: str, width: int = 1200, height: int = 2000) -> PageLoad:
        """Open ``url`` in a new tab of ``width`` x ``height``, wait for its load event, then
        count its <svg> elements and take a screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        svgs = self.send("Runtime.evaluate", {"expression": "document.querySelectorAll('svg').length",
                                              "returnByValue": True}, session=session)["result"]["value"]
        shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        return PageLoad(requests=[e["params"]["request"]["url"] for e in self.events
                                  if e.get("method") == "Network.requestWillBeSent"],
                        errors=_errors(self.events), svg_count=svgs, screenshot=base64.b64decode(shot))


def _errors(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            out.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
            out.append(f"console.{params['type']}: " + json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            out.append(f"log {params['entry']['level']}: {params['entry']['text']} ({params['entry'].get('url')})")
    return out
