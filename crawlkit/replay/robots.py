"""robots.txt per host, from a robots file (TOML or JSON) and from generated webs.

Each entry maps a host (exact name, or a glob such as ``*.gen.test``; ``*`` is the
default for every other host) to either the robots.txt text, or a table::

    ["www.example.edu"]
    text = "User-agent: *\\nDisallow: /private/\\nCrawl-delay: 2\\n"
    ["down.example.edu"]
    status = 503            # 404/410: a crawler should allow all; 500/503: disallow all
    ["slow.example.edu"]
    timeout = 5             # no answer for 5 s, then the connection closes
    ["moved.example.edu"]
    redirect = "http://www.example.edu/robots.txt"   # status 301 unless given

Hosts without an entry fall through to the sources (an archived robots.txt is
replayed) and then to the ``*`` entry; with neither, /robots.txt is a 404.
"""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

from .messages import Response, html_response, text_response

_KEYS = {"text", "status", "timeout", "redirect"}


class RobotsConfig:
    def __init__(self, entries: dict[str, str | dict] | None = None):
        self.entries: dict[str, dict] = {}
        for host, entry in (entries or {}).items():
            entry = {"text": entry} if isinstance(entry, str) else dict(entry)
            unknown = set(entry) - _KEYS
            if unknown or not entry:
                raise ValueError(f"robots entry for {host!r}: use text, status, timeout or redirect (got {sorted(entry)})")
            self.entries[host.lower()] = entry
        self._globs = [h for h in self.entries if h != "*" and any(c in h for c in "*?[")]

    @classmethod
    def load(cls, path: str | Path) -> RobotsConfig:
        text = Path(path).read_text(encoding="utf-8")
        return cls(json.loads(text) if str(path).endswith(".json") else tomllib.loads(text))

    def merged_under(self, defaults: dict[str, str | dict]) -> RobotsConfig:
        """This config with ``defaults`` (e.g. from a generated web) for hosts it does not name,
        by name or by glob: an exact default would otherwise win over the glob that meant it."""
        kept = {host: entry for host, entry in defaults.items()
                if not any(fnmatch.fnmatchcase(host.lower(), g) for g in self._globs)}
        return RobotsConfig({**kept, **self.entries})

    def respond(self, host: str) -> Response | None:
        """The configured robots.txt answer for ``host``, not counting the ``*`` default."""
        entry = self.entries.get(host)
        if entry is None:
            entry = next((self.entries[g] for g in self._globs if fnmatch.fnmatchcase(host, g)), None)
        return None if entry is None else _answer(entry)

    def default(self) -> Response | None:
        entry = self.entries.get("*")
        return None if entry is None else _answer(entry)


def _answer(entry: dict) -> Response:
    if "timeout" in entry:
        return Response(0, hang=float(entry["timeout"]), close=True, fault="robots-timeout")
    if "redirect" in entry:
        status = int(entry.get("status", 301))
        return html_response(b"<html><body>Moved</body></html>", status, [("Location", entry["redirect"])])
    status = int(entry.get("status", 200))
    if "text" in entry:
        return text_response(entry["text"], status)
    return html_response(f"<html><body><h1>{status}</h1></body></html>", status)
