"""Serving a link graph (loaded or generated) as HTML pages that change over time.

Version ``v`` of a page (``v`` = number of changes up to the clock) is a pure
function of (seed, URL, v): version 0 links to exactly the graph's out-links; each
later version keeps most of them, adds a few others, and redraws the text, so a
recrawl sees new content, a new ETag and a new Last-Modified.
"""

from __future__ import annotations

from email.utils import formatdate, parsedate_to_datetime
from functools import lru_cache

from .changes import ChangeModel
from .hashing import hash_ints, mix64, stable_hash
from .messages import HTML, Request, Response
from .text import corpus, link_item, paragraph, pick_words, render_html

# Clock time 0 is this wall time (2024-01-01T00:00:00Z) in Date and Last-Modified headers.
EPOCH = 1704067200.0
_KEEP_LINK = 0.8  # chance that a link survives a change


@lru_cache(maxsize=1 << 14)
def http_date(clock: int) -> str:
    """The HTTP date of a clock time (whole seconds: HTTP dates have no fractions)."""
    return formatdate(EPOCH + int(clock), usegmt=True)


class SyntheticSite:
    """Pages of one graph: lookup, ground truth of links per version, and responses."""

    def __init__(self, graph, changes: ChangeModel, seed: int = 0):
        self.graph = graph
        self.changes = changes
        self.seed = seed
        self._anchor_salt = stable_hash(seed, "anchor")
        self._link_item = lru_cache(maxsize=1 << 17)(self._make_link_item)

    def find(self, key: str) -> int | None:
        return self.graph.find(key)

    def links_at(self, page: int, version: int) -> list[int]:
        """Out-link targets of ``page`` in ``version``, in page order."""
        links = self.graph.out_links(page).tolist()
        if version == 0:
            return links
        added = 1 + len(links) // 5
        numbers = hash_ints(len(links) + 2 * added, self.seed, "links", self.graph.url(page), version)
        kept = [t for t, n in zip(links, numbers) if n < _KEEP_LINK * 2**32]
        for n_place, n_target in zip(numbers[len(links) :: 2], numbers[len(links) + 1 :: 2]):
            kept.insert(n_place % (len(kept) + 1), n_target % self.graph.num_pages)
        return kept

    def render(self, page: int, version: int) -> bytes:
        graph, url = self.graph, self.graph.url(page)
        topic = graph.topic if graph.is_topical(page) else ()
        title = " ".join(pick_words(stable_hash(self.seed, "title", url), 3, topic)).capitalize()
        words = corpus(graph.topic, 0.25 if topic else 0.01)
        bits = stable_hash(self.seed, "text", url, version)
        paragraphs = [paragraph(words, bits & 0xFFFFFFFF), paragraph(words, bits >> 32)]
        items = "".join(map(self._link_item, self.links_at(page, version)))
        return render_html(title, paragraphs, items)

    def _make_link_item(self, target: int) -> str:
        """The ``<li><a>`` line for a link to ``target``; anchor words depend on the target only."""
        href = self.graph.url(target)
        bits = mix64(target ^ self._anchor_salt)
        # Most, not all, anchors to topical pages carry a topic word.
        topic = self.graph.topic if self.graph.is_topical(target) and bits % 5 else ()
        return link_item(href, " ".join(pick_words(bits >> 4, 2 + (bits >> 3) % 2, topic)))

    def state(self, page: int, clock: float) -> tuple[int, float, str]:
        """``(version, last change time, ETag)`` of ``page`` at ``clock``."""
        url = self.graph.url(page)
        version, changed = self.changes.version(url, clock)
        return version, changed, f'"{stable_hash(self.seed, "etag", url, version):016x}"'

    def respond(self, page: int, request: Request, clock: float) -> Response:
        version, changed, etag = self.state(page, clock)
        headers = [("Last-Modified", http_date(int(changed))), ("ETag", etag)]
        if _not_modified(request.headers, etag, EPOCH + changed):
            return Response(304, headers)
        return Response(200, [("Content-Type", HTML), *headers], self.render(page, version))


def _not_modified(headers: dict[str, str], etag: str, modified: float) -> bool:
    """RFC 9110 13.2.2: If-None-Match decides when present, else If-Modified-Since (1 s resolution)."""
    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return "*" in tags or etag in tags
    since = headers.get("if-modified-since")
    if since is None:
        return False
    try:
        return int(modified) <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False
