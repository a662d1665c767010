"""The generated web: a seeded synthetic web of 10 to 10^6 pages over many hosts.

Spec syntax (a SOURCE argument)::

    gen:N[,key=value...]      e.g.  gen:100000,seed=7,topic=sports,topic_share=0.1

Only the link graph (numpy arrays) is built up front; HTML is rendered per request.

Shape of the graph, and why:
- host sizes follow a Zipf law (a few big sites, many small ones);
- each page has ``outdegree`` (uniform ``lo-hi``) random links: a share ``local`` to
  pages of its own host, the rest to pages chosen by a Zipf popularity (exponent
  ``alpha``), which makes in-degree heavy-tailed like the web's;
- topical pages cluster by host (each host's topical share is Beta-distributed) and
  send a share ``locality`` of their cross-host links to topical pages, so following
  links from topical pages finds more topical pages (what focused crawlers rely on);
- a navigation tree (each page links to two children in its host, each host home to
  two other host homes) makes every page reachable from the first host's home page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from .graph import open_text
from .text import topic_vocabulary

SECTIONS = ("news", "docs", "people", "events", "archive", "private")
_CHUNK = 200_000  # source pages per generation step: bounds temporary memory


@dataclass(frozen=True)
class GenSpec:
    """Options of ``gen:N,...``; each field is a ``key=value`` of the spec."""

    pages: int
    seed: int = 0
    hosts: int = 0  # 0: about sqrt(pages)
    domain: str = "gen.test"
    outdegree: str = "5-20"
    alpha: float = 0.8
    local: float = 0.5
    topic: str = "sports"
    topic_words: str = ""  # '+'-separated; default: the built-in vocabulary of `topic`
    topic_share: float = 0.2
    locality: float = 0.6
    robots: float = 0.0  # share of hosts whose robots.txt disallows /private/
    crawl_delay: float = 0.0  # Crawl-delay written in those robots.txt files (0: none)
    faults: float = 0.0  # share of non-home pages given a fault from a fixed mix

    @classmethod
    def parse(cls, spec: str) -> GenSpec:
        """The options of ``spec``, each converted and range-checked, so that a typo fails here
        with its option named rather than deep in numpy or as a web of 404s."""
        body = spec.removeprefix("gen:")
        first, *options = body.split(",")
        types = {f.name: f.type for f in fields(cls)}
        values: dict[str, object] = {"pages": _option(spec, "pages", first.strip(), "int")}
        for option in options:
            key, sep, value = option.partition("=")
            key = key.strip()
            if not sep or key not in types or key == "pages":
                raise ValueError(f"{spec}: unknown option {option!r}; options: {', '.join(list(types)[1:])}")
            values[key] = _option(spec, key, value.strip(), types[key])
        return cls(**values)

    @property
    def outdegree_range(self) -> tuple[int, int]:
        lo, _, hi = self.outdegree.partition("-")
        return int(lo), int(hi or lo)


class GeneratedWeb:
    """The graph and labels of a generated web; ground truth for tests and experiments."""

    def __init__(self, spec: GenSpec | str):
        self.spec = spec if isinstance(spec, GenSpec) else GenSpec.parse(spec)
        s = self.spec
        self.topic = topic_vocabulary(s.topic, tuple(w for w in s.topic_words.split("+") if w))
        rng = np.random.default_rng(s.seed)
        n = s.pages
        num_hosts = min(n, s.hosts or max(1, round(n**0.5)))
        host_weights = 1.0 / np.arange(1, num_hosts + 1)
        self.host_sizes = 1 + rng.multinomial(n - num_hosts, host_weights / host_weights.sum())
        self.host_start = np.zeros(num_hosts + 1, dtype=np.int64)
        np.cumsum(self.host_sizes, out=self.host_start[1:])
        self.host_of = np.repeat(np.arange(num_hosts, dtype=np.int32), self.host_sizes)
        host_topical_share = rng.beta(2 * s.topic_share, 2 * (1 - s.topic_share), num_hosts) \
            if 0 < s.topic_share < 1 else np.full(num_hosts, s.topic_share)
        self.topical = rng.random(n) < host_topical_share[self.host_of]
        self.offsets, self.targets = self._links(rng)
        self._host_pattern = re.compile(
            rf"http://s(\d+)\.{re.escape(s.domain)}/(?:([a-z]+)/p(\d+)\.html)?$")

    def _links(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """CSR arrays of all links: per page its random links, then its navigation links."""
        s, n = self.spec, self.spec.pages
        lo, hi = s.outdegree_range
        degree = rng.integers(lo, hi + 1, n)
        nav = self._navigation()
        nav_count = (nav >= 0).sum(axis=1)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degree + nav_count, out=offsets[1:])
        targets = np.empty(int(offsets[-1]), dtype=np.int32)
        within_nav = np.arange(int(nav_count.sum())) - np.repeat(np.cumsum(nav_count) - nav_count, nav_count)
        targets[np.repeat(offsets[:-1] + degree, nav_count) + within_nav] = nav[nav >= 0]

        by_popularity = rng.permutation(n)  # the page of each popularity rank
        topical_by_popularity = by_popularity[self.topical[by_popularity]]
        for start in range(0, n, _CHUNK):
            chunk_degree = degree[start : start + _CHUNK]
            src = np.repeat(np.arange(start, start + len(chunk_degree)), chunk_degree)
            host = self.host_of[src]
            is_local = rng.random(len(src)) < s.local
            to_topical = ~is_local & self.topical[src] & (rng.random(len(src)) < s.locality)
            if not len(topical_by_popularity):
                to_topical[:] = False
            anywhere = ~is_local & ~to_topical
            chunk = np.empty(len(src), dtype=np.int64)
            chunk[is_local] = self.host_start[host[is_local]] + (
                rng.random(int(is_local.sum())) * self.host_sizes[host[is_local]]).astype(np.int64)
            chunk[to_topical] = topical_by_popularity[
                _zipf_ranks(rng, int(to_topical.sum()), len(topical_by_popularity), s.alpha)]
            chunk[anywhere] = by_popularity[_zipf_ranks(rng, int(anywhere.sum()), n, s.alpha)]
            within = np.arange(len(src)) - np.repeat(np.cumsum(chunk_degree) - chunk_degree, chunk_degree)
            targets[np.repeat(offsets[start : start + len(chunk_degree)], chunk_degree) + within] = chunk
        return offsets, targets

    def _navigation(self) -> np.ndarray:
        """Per page, up to four tree links (-1 = none): two children in its host, two child hosts' homes."""
        n = self.spec.pages
        local = np.arange(n) - self.host_start[self.host_of]
        size = self.host_sizes[self.host_of]
        base = self.host_start[self.host_of]
        nav = np.full((n, 4), -1, dtype=np.int64)
        for column, child in enumerate((2 * local + 1, 2 * local + 2)):
            nav[:, column] = np.where(child < size, base + child, -1)
        num_hosts = len(self.host_sizes)
        for column, child_host in zip((2, 3), (2 * self.host_of.astype(np.int64) + 1, 2 * self.host_of.astype(np.int64) + 2)):
            is_home_with_child = (local == 0) & (child_host < num_hosts)
            nav[:, column] = np.where(is_home_with_child, self.host_start[np.minimum(child_host, num_hosts - 1)], -1)
        return nav

    # -- pages -----------------------------------------------------------------------------

    @property
    def num_pages(self) -> int:
        return self.spec.pages

    def host_name(self, host: int) -> str:
        return f"s{host}.{self.spec.domain}"

    @property
    def hosts(self) -> list[str]:
        return [self.host_name(h) for h in range(len(self.host_sizes))]

    def url(self, page: int) -> str:
        host = int(self.host_of[page])
        local = page - int(self.host_start[host])
        if local == 0:
            return f"http://s{host}.{self.spec.domain}/"
        return f"http://s{host}.{self.spec.domain}/{SECTIONS[_section(host, local)]}/p{local}.html"

    def find(self, key: str) -> int | None:
        """Page id of a URL key, or None (parsed from the URL: no table of 10^6 strings)."""
        match = self._host_pattern.match(key)
        if not match:
            return None
        host = int(match[1])
        if host >= len(self.host_sizes) or match[1] != str(host):
            return None
        if match[2] is None:
            return int(self.host_start[host])
        local = int(match[3])
        if not 0 < local < self.host_sizes[host] or match[3] != str(local) or SECTIONS[_section(host, local)] != match[2]:
            return None
        return int(self.host_start[host]) + local

    def out_links(self, page: int) -> np.ndarray:
        return self.targets[self.offsets[page] : self.offsets[page + 1]]

    def is_topical(self, page: int) -> bool:
        return bool(self.topical[page])

    def in_degree(self) -> np.ndarray:
        return np.bincount(self.targets, minlength=self.num_pages)

    def seed_urls(self) -> list[str]:
        """Host home pages; the first reaches every page through the navigation tree."""
        return [self.url(int(p)) for p in self.host_start[:-1]]

    def topical_urls(self) -> set[str]:
        return {self.url(int(p)) for p in np.flatnonzero(self.topical)}

    def write_labels(self, path: str | Path) -> None:
        """``url<TAB>topical`` (1/0) per page, with a header line, like the WebKB labels file."""
        with open_text(path, "wt") as out:
            out.write("url\ttopical\n")
            for page in range(self.num_pages):
                out.write(f"{self.url(page)}\t{int(self.topical[page])}\n")

    # -- test subjects ---------------------------------------------------------------------

    def robots(self) -> dict[str, dict]:
        """robots.txt entries (see robots.py) for the ``robots`` share of hosts: the first hosts after host 0."""
        s = self.spec
        count = round(s.robots * len(self.host_sizes))
        text = "User-agent: *\nDisallow: /private/\n" + (f"Crawl-delay: {s.crawl_delay:g}\n" if s.crawl_delay else "")
        return {self.host_name(h): {"text": text} for h in range(1, 1 + count) if h < len(self.host_sizes)}

    def fault_rules(self) -> list[dict]:
        """Fault rules (see rules.py) giving the ``faults`` share of non-home pages a fault.

        The rules split one per-URL coin into disjoint ranges, so each faulty page has
        exactly one fault and the shares below add up to ``faults``.
        """
        if self.spec.faults <= 0:
            return []
        pattern = rf"^(http://s\d+\.{re.escape(self.spec.domain)}/)[a-z]+/p\d+\.html$"
        mix = [
            (0.25, {"kind": "status", "status": 404}),
            (0.05, {"kind": "status", "status": 410}),
            (0.10, {"kind": "status", "status": 500}),
            (0.10, {"kind": "status", "status": 503, "retry_after": 1}),
            (0.05, {"kind": "status", "status": 429, "retry_after": 1}),
            (0.10, {"kind": "redirect", "hops": 2, "to": r"\1"}),
            (0.10, {"kind": "delay", "seconds": 0.5}),
            (0.05, {"kind": "type", "content_type": "pdf"}),
            (0.10, {"kind": "malformed"}),
            (0.05, {"kind": "charset", "mode": "wrong"}),
            (0.05, {"kind": "encoding", "coding": "gzip"}),
        ]
        rules, offset = [], 0.0
        for share, fault in mix:
            rate = share * self.spec.faults
            rules.append({"regex": pattern, "rate": rate, "offset": offset, **fault})
            offset += rate
        return rules


_SHARES = frozenset({"local", "topic_share", "locality", "robots", "faults"})
_HOST_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*")
_OUTDEGREE = re.compile(r"(\d+)(?:-(\d+))?")


def _option(spec: str, key: str, text: str, kind: str) -> object:
    """The value of option ``key=text``, or a ValueError saying which option is wrong and why."""
    if key == "domain":
        text = text.lower()  # host names are case-insensitive, and lookup keys are lowercase
    try:
        value = {"int": int, "float": float}.get(kind, str)(text)
    except ValueError:
        why = "not an integer" if kind == "int" else "not a number"
    else:
        why = _problem(key, value)
    if why:
        raise ValueError(f"{spec}: option {key}={text}: {why}")
    return value


def _problem(key: str, value) -> str | None:
    """Why ``value`` is out of range for option ``key``, or None."""
    if key == "pages" and not 1 <= value <= 10_000_000:
        return "must be between 1 and 10^7"
    if key in ("seed", "hosts") and value < 0:
        return "must be >= 0"
    if key in _SHARES and not 0.0 <= value <= 1.0:
        return "must be a share between 0 and 1"
    if key in ("alpha", "crawl_delay") and not (math.isfinite(value) and value >= 0):
        return "must be a finite number >= 0"
    if key == "domain" and not (len(value) <= 240 and _DOMAIN.fullmatch(value)):
        return "must be a host name (letters, digits, '-' and '.')"
    if key == "outdegree":
        match = _OUTDEGREE.fullmatch(value)
        if not match or int(match[1]) > int(match[2] or match[1]):
            return "must be N or LO-HI with 0 <= LO <= HI"
    return None


def _zipf_ranks(rng: np.random.Generator, size: int, count: int, alpha: float) -> np.ndarray:
    """``size`` ranks in ``[0, count)``, rank r drawn with weight about ``(r+1)^-alpha``.

    Inverse transform of the continuous power law on [1, count+1): a formula per
    draw, where a search in a table of ``count`` weights costs a cache miss per step.
    """
    u = rng.random(size)
    exponent = 1.0 - alpha
    if abs(exponent) < 1e-9:
        x = (count + 1.0) ** u
    else:
        x = (1.0 + u * ((count + 1.0) ** exponent - 1.0)) ** (1.0 / exponent)
    return np.minimum(x.astype(np.int64) - 1, count - 1)


def _section(host: int, local: int) -> int:
    """Site section of a page: a fixed scramble of its position, so paths look varied."""
    return ((local * 2654435761 + host * 40503) >> 5) % len(SECTIONS)
