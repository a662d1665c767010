"""Offline simulator of crawlkit's batch focused crawl on WebKB (Cornell + Texas, topic ``course``).

Why: one real crawl of scripts/bench/focused_webkb.py takes about half an hour, and its result
depends on the tie order (crawlkit's ``generate.tie_break``: which of many equally ranked URLs
fill a round). Over 20 equally arbitrary tie orders the modified hot-queue crawler's recall at
250 pages ranges 0.354-0.537, wider than the differences between the policies screened here,
so a single crawl cannot rank two policies. This script replays the same crawl in plain Python
(no Spark), 0.5-3 s per policy and tie order, to screen focused-crawl policies over many tie
orders, paired: every policy sees the same tie orders as "hot-queue modified".

Policies (policies() near the end): the first four mirror crawlkit's scorers and policies;
"dead links, explored directories wait (crawlkit)" is crawlkit's default focused policy
(generate.policy = hot_queue with focus.dead_link_confidence and
focus.explored_directory_pages); "hot-queue modified, dead links" is the default until
2026-12-03 (no explored-directory tier); the rest are alternatives screened against those.

Model (mirrors scripts/bench/focused_webkb.py and crawlkit's stages):

* The web: every archived response of pages.warc.gz, looked up like the replay web
  (crawlkit.replay.urls.url_key, then key_variants: other scheme, trailing slash toggled).
  Anything else is a 404 (a "dead link": status gone, never refetched). The archive holds
  no redirects (all 1,693 records are 200), so redirects need no model here.
* Parse: crawlkit.parse.parse_document with crawlkit's default [parser] and [urls]
  settings plus hosts_allow = [.cs.cornell.edu, .cs.utexas.edu] (a ".suffix" pattern also
  matches the bare domain). Outlinks are filtered as stages/parse.py does (UrlFilter,
  same-page links dropped) and as updatedb does (nofollow links and pages dropped, one link
  per (src, dst), first occurrence). A page is parsed under the URL that was requested, so
  relative links resolve against it (as in the real crawl).
* Rounds: every known, unfetched URL is a candidate; the policy gives each a sort key; the
  first topN (ties: crawlkit's default tie_break = "hash", Spark's xxhash64(url) with seed
  42, then the URL) are fetched; then the state is updated (new URLs, depth, links, hot
  flags, hot_distance) before the next round.
* depth: as crawlkit's updatedb: a URL gets min(source depth) + 1 over the links of the
  round that discovers it, and keeps it (seeds 0).
* hot (paper): a topic word form in the title, or >= 10 topic-word occurrences in the text.
  hot_distance: hot pages 0, BFS over the known links, capped at 8 (crawlkit relaxes the
  stored value; hot flags never change and links only grow, so a BFS from scratch is equal).
* Measures: over fetch order (rounds in order, inside a round by the policy's key): K =
  pages of the web (404s skipped, a page reached under two URLs counted once) and K =
  fetches (every distinct URL fetched; a 404 is a fetch that is not on topic).
* Not modelled: robots.txt, retries, fetch failures; in-round order is the policy's key
  where the real crawl measures in fetched_at order (visible at K = 100 only).

Checked against real crawls (rounds of 100):

* Round by round, against older real crawls (6 rounds, 420 fetches, URL tie order, dead
  links not learned; ``--url-ties --fetches 420`` here): the fetch lists of breadth-first,
  hot-queue and hot-queue modified are identical in every round; for focus the round-4
  scores agree for every URL.
* Recall of ``course`` pages, real focused_webkb.py crawl vs this simulator (seed-42 hash ties):

  | crawler            | real @100/250/500 pages | sim               | real @100/250/500 fetches | sim               |
  |--------------------|-------------------------|-------------------|---------------------------|-------------------|
  | breadth-first      | 0.146/0.329/0.378       | 0.171/0.329/0.378 | 0.134/0.305/0.329         | 0.110/0.293/0.329 |
  | focus              | 0.183/0.354/0.488       | 0.171/0.366/0.488 | 0.000/0.195/0.317         | 0.122/0.195/0.317 |
  | hot-queue modified | 0.207/0.476/-           | 0.207/0.476/-     | 0.000/0.341/0.402         | 0.134/0.341/0.402 |
  | hot-queue          | 0.171/0.366/-           | 0.171/0.366/-     | (not measured)            | 0.134/0.268/0.293 |
  | dead links         | 0.207/0.476/0.610       | 0.207/0.476/0.610 | 0.171/0.341/0.402         | 0.134/0.341/0.402 |
  | dead links, explored directories wait | 0.207/0.500/0.610 | 0.207/0.500/0.610 | 0.061/0.390/0.402 | 0.134/0.341/0.402 |

  The dead-links policy's real crawl (session 8) also reached the same 548 pages of the web
  in 2,200 fetches as the simulator, and the explored-directories policy's (2026-12-03) the
  same 561.

  The differences at K = 100 (and at 250 fetches) are the in-round order: round 3 straddles
  K = 100, and the real crawl counts fetches in fetched_at order.

Usage, from the repository root (the first run also parses the archive into --cache)::

    .venv/bin/python scripts/bench/focused_webkb_sim.py                  # seed-42 ties, every policy
    .venv/bin/python scripts/bench/focused_webkb_sim.py --screen 20      # 20 tie orders, paired
    .venv/bin/python scripts/bench/focused_webkb_sim.py --screen 20 --topN 50 \\
        --only "hot-queue modified" --only "dead links, explored directories wait (crawlkit)" --confidence 0.8
"""
from __future__ import annotations

import argparse
import csv
import json
import pickle
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from crawlkit.conf import load_conf
from crawlkit.parse import parse_document
from crawlkit.replay.urls import url_key
from crawlkit.replay.warc import WarcArchive
from crawlkit.stages.hot_queue import dead_probability
from crawlkit.urls import UrlFilter, UrlNormalizer

DATA = Path("/work/shared/data/webkb-cornell-texas")
CACHE = Path("/tmp/crawlkit-focused-sim/parse_cache.pkl")
SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/"]
TOPIC_WORDS = ["course", "syllabus", "homework", "lecture", "assignment", "exam"]
TOPIC_FORMS = frozenset(f for w in TOPIC_WORDS for f in (w, w + "s", w + "es"))
SCOPE = [".cs.cornell.edu", ".cs.utexas.edu"]
AT = (100, 250, 500)            # K for recall and harvest
WEB_AT_FETCHES = (1300, 2200)   # pages of the web reached within this many fetches
REFERENCE = "hot-queue modified"
# crawlkit's [focus] defaults
LEARN_PRIOR = 2.0               # focus.learn_prior
TIE_BREADTH = 0.001             # focus.tie_breadth
MAX_DISTANCE = 8                # focus.max_distance
HOT_MIN_COUNT = 10              # focus.hot_min_count
HOT_QUEUE_DISTANCE = 3          # focus.hot_queue_distance (the paper's modified crawler)
EXPLORED_PAGES = 3              # focus.explored_directory_pages

_WORD = re.compile(r"[^\W\d_]+|\d+")
_DIRECTORY = re.compile(r"^[^?#]*/")    # as crawlkit.stages.hot_queue
URL_FIELDS = ("href", "onmouseover", "src")
TEXT_FIELDS = ("anchor", "surrounding", "image_alt", "area", "frame", "title", "name")


def words(text):
    """crawlkit.scoring.focus.query.words: lower-case letter runs and digit runs."""
    return _WORD.findall((text or "").lower())


def directory(url):
    """The URL up to the last "/" before any "?" or "#" (crawlkit's dead-link grouping)."""
    return _DIRECTORY.match(url).group(0)


# ------------------------------------------------------------------ Spark's xxhash64
_M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                      9650029242287828579, 2870177450012600261)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & _M64, 31) * P1) & _M64


def xxh64(data: bytes, seed: int = 42) -> int:
    """XXH64 as Spark's xxhash64 (the standard algorithm), as a signed long: the tie order."""
    n, i = len(data), 0
    lane = lambda j, w: int.from_bytes(data[j:j + w], "little")
    if n >= 32:
        v = [(seed + P1 + P2) & _M64, (seed + P2) & _M64, seed & _M64, (seed - P1) & _M64]
        while i <= n - 32:
            v = [_round(v[k], lane(i + 8 * k, 8)) for k in range(4)]
            i += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for x in v:
            h = ((h ^ _round(0, x)) * P1 + P4) & _M64
    else:
        h = (seed + P5) & _M64
    h = (h + n) & _M64
    while i <= n - 8:
        h = (_rotl(h ^ _round(0, lane(i, 8)), 27) * P1 + P4) & _M64
        i += 8
    if i <= n - 4:
        h = (_rotl(h ^ ((lane(i, 4) * P1) & _M64), 23) * P2 + P3) & _M64
        i += 4
    while i < n:
        h = (_rotl(h ^ ((data[i] * P5) & _M64), 11) * P1) & _M64
        i += 1
    h = ((h ^ (h >> 33)) * P2) & _M64
    h = ((h ^ (h >> 29)) * P3) & _M64
    h ^= h >> 32
    return h - (1 << 64) if h >= (1 << 63) else h


# ------------------------------------------------------------------ the replay web
class OfflineWeb:
    """Archive lookup, labels, and a cached parse of every requested URL that exists."""

    def __init__(self, data: Path, cache: Path):
        self.archive = WarcArchive(data / "pages.warc.gz")
        conf = load_conf(overrides={"crawl.dir": str(cache.parent / "unused-crawl"),
                                    "urls.hosts_allow": SCOPE}).to_dict()
        self.conf = conf
        urls_conf = {k[len("urls."):]: v for k, v in conf.items() if k.startswith("urls.")}
        self.normalizer, self.filter = UrlNormalizer(urls_conf), UrlFilter(urls_conf)
        self.label = {}     # page id (archive offset) -> class
        with open(data / "labels.tsv", encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                page = self.page_of(row["url"])
                if page is not None:
                    self.label.setdefault(page, row["class"])
        self.n_course = sum(1 for c in self.label.values() if c == "course")
        # a cache is only valid for the same archive and parse settings
        self.cache_path = cache
        self.cache_key = repr((str(data.resolve()), sorted((k, repr(v)) for k, v in conf.items()
                                                           if k.startswith(("urls.", "parser.")))))
        self.parsed, self._dirty = {}, False
        if cache.exists():
            with open(cache, "rb") as f:
                stored = pickle.load(f)
            if stored.get("key") == self.cache_key:
                self.parsed = stored["pages"]

    def page_of(self, url):
        page = self.archive.find(url_key(url))
        # a slash-toggled URL: the replay web answers 301 to the archived one; modelled as that
        # page (the crawler would fetch it the round after)
        return self.archive.find(url_key(page)) if isinstance(page, str) else page

    def fetch(self, url):
        """None for a 404, else (page id, {hot, links: [(dst, anchor words, link words)], words})."""
        page = self.page_of(url)
        if page is None:
            return None
        if url not in self.parsed:
            self.parsed[url], self._dirty = self._parse(url, page), True
        return page, self.parsed[url]

    def _parse(self, url, page):
        response = self.archive.respond(page, None, 0.0)
        headers = {n.lower(): v for n, v in response.headers}
        c = self.conf
        r = parse_document(url, response.body, headers.get("content-type"), headers,
                           max_outlinks=c["parser.max_outlinks"], max_text=c["parser.max_text"],
                           backend="lxml", signature=c["parser.signature"], normalizer=self.normalizer)
        title_words, text_words = words(r.get("title")), words(r.get("text"))
        topic_count = sum(1 for w in text_words if w in TOPIC_FORMS)
        links, seen = [], set()
        if not r.get("nofollow"):
            for link in r.get("outlinks") or []:
                dst = link["url"]
                if self.filter.check(dst) or dst == url or link.get("nofollow") or dst in seen:
                    continue
                seen.add(dst)
                meta = link.get("meta") or {}
                anchor = words(link.get("anchor"))
                link_words = set(words(dst)) | set(anchor)
                for field in URL_FIELDS + TEXT_FIELDS:
                    link_words.update(words(meta.get(field)))
                links.append((dst, frozenset(anchor), frozenset(link_words)))
        return {"hot": bool(TOPIC_FORMS.intersection(title_words)) or topic_count >= HOT_MIN_COUNT,
                "links": links, "words": frozenset(title_words) | frozenset(text_words)}

    def save(self):
        if self._dirty:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.cache_path, "wb") as f:
                pickle.dump({"key": self.cache_key, "pages": self.parsed}, f)
            self._dirty = False


# ------------------------------------------------------------------ crawl state
class State:
    """What a round's scoring may read: what the real crawldb and link table hold."""

    def __init__(self, web: OfflineWeb):
        self.web = web
        self.depth = {s: 0 for s in SEEDS}    # url -> discovery depth
        self.fetched = {}                     # url -> None (404) or page id
        self.parsed = {}                      # url -> parsed page (fetched, exists)
        self.out = defaultdict(dict)          # src -> {dst: (anchor words, link words)}
        self.inlinks = defaultdict(set)       # dst -> {src}
        self.hot_link = set()                 # topic word in the URL or an in-link anchor
        self.hot_distance = {}
        self._memo = {}                       # per-round results shared by policies

    def memo(self, key, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def candidates(self):
        return [u for u in self.depth if u not in self.fetched]

    def apply(self, urls):
        """Fetch one round's ``urls`` and update the state as updatedb would."""
        new_depth = {}
        for u in urls:
            result = self.web.fetch(u)
            if result is None:
                self.fetched[u] = None
                continue
            self.fetched[u], self.parsed[u] = result
            for dst, anchor, link_words in result[1]["links"]:
                if dst in self.out[u]:
                    continue
                self.out[u][dst] = (anchor, link_words)
                self.inlinks[dst].add(u)
                if TOPIC_FORMS.intersection(anchor):
                    self.hot_link.add(dst)
                if dst not in self.depth:
                    new_depth[dst] = min(new_depth.get(dst, 1 << 30), self.depth[u] + 1)
        self.depth.update(new_depth)
        self.hot_link.update(u for u in new_depth if TOPIC_FORMS.intersection(words(u)))
        self.hot_distance = self._distances()
        self._memo = {}

    def _distances(self):
        dist = {u: 0 for u, p in self.parsed.items() if p["hot"]}
        frontier, d = list(dist), 0
        while frontier and d < MAX_DISTANCE:
            nxt = []
            for u in frontier:
                for v in self.out.get(u, ()):
                    if v not in dist:
                        dist[v] = d + 1
                        nxt.append(v)
            frontier, d = nxt, d + 1
        return dist

    def outcome(self, url):
        """True/False once fetched (a 404 is False), None while unknown."""
        if url not in self.fetched:
            return None
        return self.fetched[url] is not None and self.parsed[url]["hot"]

    def in_hot_queue(self, url, distance_cut=HOT_QUEUE_DISTANCE):
        return url in self.hot_link or self.hot_distance.get(url, 99) < distance_cut

    def source_feature(self, src):
        """The focus scorer's feature of a link's source page: ~hot, ~d1..~d3 or ~far."""
        d = self.hot_distance.get(src)
        return "~hot" if d == 0 else f"~d{d}" if d is not None and d <= 3 else "~far"

    def focus_rates(self, hit_key="hot", hit=None):
        """crawlkit's ``focus`` scorer: (rate per feature, best rate per unfetched dst, p0).

        A link's features are its words and its source's feature; a feature's rate is the
        hit share of the fetched targets of its links, smoothed (LEARN_PRIOR pseudo-links)
        towards max(p0, the word's co-occurrence with hot pages). Dead targets are misses
        (focus.learn_from_dead_links). ``hit`` (u -> bool, named by ``hit_key``) overrides
        what counts as a hit for a parsed page (default: the paper's hot flag)."""
        return self.memo(("focus", hit_key), lambda: self._focus_rates(hit))

    def _focus_rates(self, hit):
        hit = hit or (lambda u: self.parsed[u]["hot"])
        outcome = {u: hit(u) for u in self.parsed}
        p0 = sum(outcome.values()) / len(outcome) if outcome else 0.0
        count, hot_count = defaultdict(int), defaultdict(int)
        for p in self.parsed.values():
            for w in p["words"]:
                count[w] += 1
                hot_count[w] += p["hot"]
        related = {w: hot_count[w] / (count[w] + LEARN_PRIOR) for w in count}
        related.update((f, 1.0) for f in TOPIC_FORMS)
        outcome.update((u, False) for u, page in self.fetched.items() if page is None)
        hits, links_seen = defaultdict(float), defaultdict(int)
        for src, links in self.out.items():
            sf = self.source_feature(src)
            for dst, (_, link_words) in links.items():
                o = outcome.get(dst)
                if o is None:
                    continue
                for w in (*link_words, sf):
                    links_seen[w] += 1
                    hits[w] += o

        def rate(w):
            prior = max(related.get(w, p0), p0)
            return (hits.get(w, 0.0) + LEARN_PRIOR * prior) / (links_seen.get(w, 0) + LEARN_PRIOR)
        rates, best = {}, {}
        for src, links in self.out.items():
            sf = self.source_feature(src)
            if sf not in rates:
                rates[sf] = rate(sf)
            for dst, (_, link_words) in links.items():
                if dst in self.fetched:
                    continue
                b = rates[sf]
                for w in link_words:
                    if w not in rates:
                        rates[w] = rate(w)
                    b = max(b, rates[w])
                if b > best.get(dst, -1.0):
                    best[dst] = b
        return rates, best, p0

    def directory_counts(self):
        """directory -> [fetched, dead] over every URL fetched so far."""
        def compute():
            counts = defaultdict(lambda: [0, 0])
            for u, page in self.fetched.items():
                c = counts[directory(u)]
                c[0] += 1
                c[1] += page is None
            return counts
        return self.memo("directories", compute)


# ------------------------------------------------------------------ crawl loop + measures
class Crawl:
    """One crawl: rounds of ``top_n`` by the policy's keys, ties by xxhash64(url, seed), then url
    (``seed`` None: by url alone, as before crawlkit's hash tie-break)."""
    _hashes = {}

    def __init__(self, web, policy, top_n=100, max_fetches=2200, seed=42):
        self.web, self.policy, self.top_n, self.max_fetches, self.seed = web, policy, top_n, max_fetches, seed
        self.state = State(web)
        self.order = []

    def tie_key(self, url):
        if self.seed is None:
            return (url,)
        h = Crawl._hashes.get((url, self.seed))
        if h is None:
            h = Crawl._hashes[(url, self.seed)] = xxh64(url.encode("utf-8"), self.seed)
        return (h, url)

    def run(self):
        st = self.state
        while len(self.order) < self.max_fetches and (candidates := st.candidates()):
            keys = self.policy(st, candidates)
            chosen = sorted(candidates, key=lambda u: (keys[u], self.tie_key(u)))
            chosen = chosen[:min(self.top_n, self.max_fetches - len(self.order))]
            st.apply(chosen)
            self.order.extend(chosen)
        return self

    def measures(self):
        """Recall and harvest curves of course pages, K = pages of the web and K = fetches."""
        fetched, seen, web_hits, fetch_hits = self.state.fetched, set(), [], []
        for u in self.order:
            is_course = fetched[u] is not None and self.web.label.get(fetched[u]) == "course"
            fetch_hits.append(is_course)
            if fetched[u] is not None and fetched[u] not in seen:
                seen.add(fetched[u])
                web_hits.append(is_course)

        def curves(hits):
            found = np.cumsum(hits)
            return {"recall": (found / self.web.n_course).tolist(),
                    "harvest": (found / np.arange(1, len(hits) + 1)).tolist()}
        web_within = {f: len({fetched[u] for u in self.order[:f]} - {None}) for f in WEB_AT_FETCHES}
        return {"pages": curves(web_hits), "fetches": curves(fetch_hits), "n_pages": len(web_hits),
                "n_fetches": len(self.order), "web_within": web_within, "course_found": sum(web_hits)}


# ------------------------------------------------------------------ policies
# A policy maps (state, candidates) to {url: sort key}; lower keys are fetched first.

def breadth_first(st, cands):
    """crawlkit's depth scorer: discovery depth."""
    return {u: (st.depth[u],) for u in cands}


def hot_queue(distance_cut):
    """crawlkit's hot_queue policy: URLs with a topic word in the URL or an in-link anchor, or
    hot_distance < distance_cut (0: the paper's original crawler, 3: its modified one), first;
    each queue breadth-first."""
    return lambda st, cands: {u: (0 if st.in_hot_queue(u, distance_cut) else 1, st.depth[u]) for u in cands}


def focus(st, cands, hit_key="hot", hit=None):
    """crawlkit's focus scorer: best learned link rate, depth as a tie-breaker."""
    _, best, _ = st.focus_rates(hit_key, hit)
    return {u: (-(best.get(u, 0.0) + TIE_BREADTH / (1 + st.depth[u])),) for u in cands}


def _dead_dirs(st, confidence):
    """Directories whose fetched URLs, d dead and l live, make them mostly dead with
    posterior probability P(dead share > 1/2 | Beta(d + 1, l + 1)) > confidence."""
    def compute():
        counts = st.directory_counts()
        dirs = list(counts)
        dead = np.array([counts[d][1] for d in dirs], dtype=float)
        live = np.array([counts[d][0] - counts[d][1] for d in dirs], dtype=float)
        return {d for d, p in zip(dirs, dead_probability(dead, live)) if p > confidence}
    return st.memo(("dead directories", confidence), compute)


def dead_directories(confidence):
    """crawlkit's default until 2026-12-03 (focus.dead_link_confidence): a hot-queue URL
    joins the other queue when its directory is mostly dead (``_dead_dirs``)."""
    def policy(st, cands):
        return {u: (_default_queue(st, u, confidence), st.depth[u]) for u in cands}
    return policy


def _default_queue(st, u, confidence):
    """The default's queue of u: 0 hot, 1 the other."""
    return 0 if st.in_hot_queue(u) and directory(u) not in _dead_dirs(st, confidence) else 1


def explored_directories(confidence, pages=EXPLORED_PAGES):
    """crawlkit's default (focus.explored_directory_pages on top of the dead-link evidence): a
    hot-queue URL whose directory has given ``pages`` parsed pages waits behind the other
    hot-queue URLs, still ahead of the other queue."""
    def policy(st, cands):
        live = st.memo("live directories", lambda: _live_directories(st))
        keys = {}
        for u in cands:
            q = _default_queue(st, u, confidence)
            keys[u] = (q, q == 0 and live.get(directory(u), 0) >= pages, st.depth[u])
        return keys
    return policy


def _live_directories(st):
    """directory -> parsed pages fetched from it."""
    counts = defaultdict(int)
    for u in st.parsed:
        counts[directory(u)] += 1
    return counts


def dead_directories_focus_tiebreak(confidence):
    """The default; the learned focus rate breaks depth ties inside each queue."""
    def policy(st, cands):
        _, best, _ = st.focus_rates()
        return {u: (_default_queue(st, u, confidence), st.depth[u], -best.get(u, 0.0)) for u in cands}
    return policy


def dead_directories_inlinks(confidence):
    """The default; more known in-links first among URLs of equal depth in each queue."""
    def policy(st, cands):
        return {u: (_default_queue(st, u, confidence), st.depth[u], -len(st.inlinks.get(u, ())))
                for u in cands}
    return policy


def sibling_yield(st):
    """Per unfetched URL, the best yield of a page linking to it: the share of that page's
    fetched out-links that were hubs (hot, or linking to a hot-queue URL by topic word),
    smoothed (LEARN_PRIOR pseudo-links) towards the share of hubs among parsed pages, which
    it also returns. A page that keeps leading to hubs (a people list whose pages link to
    course pages) ranks its other links higher."""
    def compute():
        hubs = {u for u, p in st.parsed.items()
                if p["hot"] or any(d in st.hot_link for d, _, _ in p["links"])}
        p0 = len(hubs) / max(1, len(st.parsed))
        best = {}
        for s, links in st.out.items():
            fetched = [d for d in links if d in st.fetched]
            rate = (sum(d in hubs for d in fetched) + LEARN_PRIOR * p0) / (len(fetched) + LEARN_PRIOR)
            for d in links:
                if d not in st.fetched and rate > best.get(d, -1.0):
                    best[d] = rate
        return best, p0
    return st.memo("sibling yield", compute)


def dead_directories_sibling_queue(confidence):
    """The default with a middle queue: URLs of the other queue whose sibling yield is above
    the share of hubs among parsed pages come before the rest of it."""
    def policy(st, cands):
        best, p0 = sibling_yield(st)
        return {u: (_default_queue(st, u, confidence) * (1 if best.get(u, 0.0) > p0 else 2), st.depth[u])
                for u in cands}
    return policy


def dead_directories_probe(confidence, probe=3):
    """The default, probing unexplored directories: in one round a hot-queue URL of a
    directory with fewer than ``probe`` fetched URLs goes first only if it is one of the first
    (probe - fetched) of its directory there (depth, then the tie order); the others wait
    behind the hot queue until the evidence of the probes is in. ``probe`` = 3 is the
    smallest number of dead siblings that moves a directory at confidence 0.9. (The probes
    are picked by depth, then the seed-42 hash: a policy does not see the crawl's tie seed.)"""
    def policy(st, cands):
        counts = st.directory_counts()
        fetched = {d: c[0] for d, c in counts.items()}
        base = {u: (_default_queue(st, u, confidence), st.depth[u]) for u in cands}
        unexplored = defaultdict(list)     # directory -> its hot-queue URLs, if under-probed
        for u in cands:
            if base[u][0] == 0 and fetched.get(directory(u), 0) < probe:
                unexplored[directory(u)].append(u)
        keys = {u: (2 * q, d) for u, (q, d) in base.items()}
        for d, urls in unexplored.items():
            ranked = sorted(urls, key=lambda u: (base[u][1], xxh64(u.encode(), 42), u))
            for u in ranked[probe - fetched.get(d, 0):]:
                keys[u] = (1, base[u][1])
        return keys
    return policy


def dead_and_live_evidence(st, u):
    """(dead, live) among u's evidence: fetched URLs in its directory plus fetched URLs linked
    from the pages that link to u (its siblings), each URL counted once."""
    siblings = {v for s in st.inlinks.get(u, ()) for v in st.out.get(s, ()) if v in st.fetched}
    n, dead = len(siblings), sum(1 for v in siblings if st.fetched[v] is None)
    counts = st.directory_counts().get(directory(u))
    if counts:
        mates = [v for v in siblings if directory(v) == directory(u)]    # already counted
        n += counts[0] - len(mates)
        dead += counts[1] - sum(1 for v in mates if st.fetched[v] is None)
    return dead, n - dead


def evidence_demote(st, cands):
    """A hot-queue URL whose evidence (directory + siblings) makes it more likely dead than
    alive, (dead + 1) / (n + 2) > 1/2, joins the other queue; no evidence never demotes."""
    def demoted(u):
        dead, live = dead_and_live_evidence(st, u)
        return (dead + 1) / (dead + live + 2) > 0.5
    return {u: (0 if st.in_hot_queue(u) and not demoted(u) else 1, st.depth[u]) for u in cands}


def smoothed_dead_rate(st, url):
    """The 404 share among fetched URLs of the URL's directory, smoothed (LEARN_PRIOR
    pseudo-fetches at each level) towards that of the URLs linked from its sources, smoothed
    towards the crawl's global 404 share."""
    def compute():
        src_n, src_dead = defaultdict(int), defaultdict(int)
        for u, page in st.fetched.items():
            for s in st.inlinks.get(u, ()):
                src_n[s] += 1
                src_dead[s] += page is None
        dead = sum(1 for page in st.fetched.values() if page is None)
        return src_n, src_dead, (dead + 1.0) / (len(st.fetched) + 2.0)
    src_n, src_dead, global_rate = st.memo("source dead rates", compute)
    sources = st.inlinks.get(url, ())
    p_src = ((sum(src_dead[s] for s in sources) + LEARN_PRIOR * global_rate)
             / (sum(src_n[s] for s in sources) + LEARN_PRIOR))
    n, dead = st.directory_counts().get(directory(url), (0, 0))
    return (dead + LEARN_PRIOR * p_src) / (n + LEARN_PRIOR)


def smoothed_404_demote(st, cands):
    """A hot-queue URL with smoothed_dead_rate > 1/2 joins the other queue. Unexplored URLs
    inherit the crawl's high global 404 share, so this demotes without evidence."""
    return {u: (0 if st.in_hot_queue(u) and smoothed_dead_rate(st, u) <= 0.5 else 1, st.depth[u])
            for u in cands}


def focus_tiebreak(st, cands):
    """hot-queue modified; the learned focus rate breaks depth ties inside each queue."""
    _, best, _ = st.focus_rates()
    return {u: (0 if st.in_hot_queue(u) else 1, st.depth[u], -best.get(u, 0.0)) for u in cands}


def focus_hub_hit(m):
    """focus learning a better proxy of ``course``: a hit is a hot page or a hub, a page
    linking to >= m topical URLs (hot_link) or hot pages."""
    def policy(st, cands):
        def is_hit(u):
            if st.parsed[u]["hot"]:
                return True
            return sum(1 for dst, _, _ in st.parsed[u]["links"]
                       if dst in st.hot_link or st.outcome(dst) is True) >= m
        return focus(st, cands, hit_key=("hub", m), hit=is_hit)
    return policy


def learned_cut(st, cands):
    """hot queue = hot_link, or an in-link whose source feature (~hot/~d1/~d2/~d3/~far) has a
    learned rate above p0 (such links have led to hot pages more often than a random fetch)."""
    rates, _, p0 = st.focus_rates()

    def hot(u):
        return u in st.hot_link or max((rates.get(st.source_feature(s), 0.0) for s in st.inlinks.get(u, ())),
                                       default=0.0) > p0
    return {u: (0 if hot(u) else 1, st.depth[u]) for u in cands}


def policies(confidence):
    return {
        "breadth-first": breadth_first,
        "hot-queue": hot_queue(0),
        "hot-queue modified": hot_queue(HOT_QUEUE_DISTANCE),
        "focus": focus,
        "dead links, explored directories wait (crawlkit)": explored_directories(confidence),
        "hot-queue modified, dead links": dead_directories(confidence),
        "dead links, explored directories wait (2 pages)": explored_directories(confidence, 2),
        "dead links, explored directories wait (5 pages)": explored_directories(confidence, 5),
        "hot-queue modified, dead links (directory + siblings, 1/2)": evidence_demote,
        "hot-queue modified, smoothed 404 rate": smoothed_404_demote,
        "hot-queue modified, focus tie-break": focus_tiebreak,
        "focus, hub-aware hit (m = 2)": focus_hub_hit(2),
        "hot queue, learned cut": learned_cut,
        "default, focus tie-break": dead_directories_focus_tiebreak(confidence),
        "default, in-link count tie-break": dead_directories_inlinks(confidence),
        "default, sibling-yield queue": dead_directories_sibling_queue(confidence),
        "default, probe unexplored directories (3)": dead_directories_probe(confidence),
    }


# ------------------------------------------------------------------ modes and tables
def at(curve, k):
    return f"{curve[k - 1]:.3f}" if len(curve) >= k else "–"


def policy_table(results):
    cols = ([f"rec@{k}" for k in AT] + [f"harv@{k}" for k in AT] + [f"rec@{k}f" for k in AT]
            + [f"harv@{k}f" for k in AT] + [f"web@{f}f" for f in WEB_AT_FETCHES])
    rows = ["| policy | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, m in results.items():
        cells = [at(m[kind][measure], k) for kind in ("pages", "fetches")
                 for measure in ("recall", "harvest") for k in AT]
        cells += [str(m["web_within"][f]) for f in WEB_AT_FETCHES]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def screen(web, pols, top_n, fetches, seeds):
    """Every policy under each tie order (xxhash64 seed): recall at K per seed. A crawl that
    never reaches K pages of the web is credited with its final recall at K."""
    rows = {}
    for name, policy in pols.items():
        per_seed = []
        for seed in seeds:
            m = Crawl(web, policy, top_n, fetches, seed).run().measures()
            values = {f"web@{f}f": m["web_within"][f] for f in WEB_AT_FETCHES}
            for kind, suffix in (("pages", ""), ("fetches", "f")):
                curve = m[kind]["recall"]
                for k in AT:
                    values[f"rec@{k}{suffix}"] = curve[min(k, len(curve)) - 1] if curve else 0.0
                    values[f"reach@{k}{suffix}"] = len(curve) >= k
            per_seed.append(values)
        rows[name] = per_seed
        web.save()
        print(f"[screen] {name}: rec@250 {statistics.mean(v['rec@250'] for v in per_seed):.3f} "
              f"rec@500 {statistics.mean(v['rec@500'] for v in per_seed):.3f}", file=sys.stderr, flush=True)
    return rows


def screen_table(rows, ref=REFERENCE):
    """Mean (min-max) per measure, and W/L: tie orders where a policy's recall is above / below
    the reference's under the same tie order."""
    cols = [f"rec@{k}{suffix}" for suffix in ("", "f") for k in AT]
    head = ("| policy | " + " | ".join(f"{c} mean (min–max)" for c in cols) + " | reached 500 pages | "
            + " | ".join(f"web@{f}f" for f in WEB_AT_FETCHES) + f" | W/L vs {ref} @250 / @500 |")
    out = [head, "|---" * (len(cols) + 3 + len(WEB_AT_FETCHES)) + "|"]
    base = rows.get(ref)
    for name, per_seed in rows.items():
        cells = []
        for c in cols:
            xs = [v[c] for v in per_seed]
            cells.append(f"{statistics.mean(xs):.3f} ({min(xs):.3f}–{max(xs):.3f})")
        cells.append(f"{sum(v['reach@500'] for v in per_seed)}/{len(per_seed)}")
        cells += [f"{statistics.mean(v[f'web@{f}f'] for v in per_seed):.0f}" for f in WEB_AT_FETCHES]
        paired = "–"
        if base and name != ref:
            paired = " / ".join(f"{sum(a[c] > b[c] for a, b in zip(per_seed, base))}W/"
                                f"{sum(a[c] < b[c] for a, b in zip(per_seed, base))}L"
                                for c in ("rec@250", "rec@500"))
        out.append(f"| {name} | " + " | ".join(cells) + f" | {paired} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA, help="WebKB folder: pages.warc.gz, labels.tsv")
    ap.add_argument("--cache", type=Path, default=CACHE, help="parse cache, rebuilt when --data or the [urls]/[parser] settings change "
                         "(delete it after changing crawlkit's parse code)")
    ap.add_argument("--only", action="append", metavar="NAME", help="run this policy (repeatable)")
    ap.add_argument("--topN", type=int, default=100, help="URLs per round")
    ap.add_argument("--fetches", type=int, default=2200, help="fetches per crawl")
    ap.add_argument("--confidence", type=float, default=0.9,
                    help="focus.dead_link_confidence of the crawlkit dead-links policy")
    ap.add_argument("--screen", type=int, default=0, metavar="N",
                    help="run every policy under N tie orders (seeds 42, 1..N-1), paired against " + REFERENCE)
    ap.add_argument("--url-ties", action="store_true", help="break ties by URL (crawlkit before its hash tie-break)")
    ap.add_argument("--json", type=Path, metavar="OUT", help="write the measures (or the screen's values)")
    args = ap.parse_args()

    all_policies = policies(args.confidence)
    unknown = set(args.only or ()) - set(all_policies)
    if unknown:
        ap.error(f"unknown policy {sorted(unknown)}; known: {list(all_policies)}")
    if args.screen and args.url_ties:
        ap.error("--screen varies the hash seed; --url-ties is for single runs")
    chosen = {n: p for n, p in all_policies.items() if not args.only or n in args.only}
    web = OfflineWeb(args.data, args.cache)
    ties = "URL" if args.url_ties else "xxhash64 seed 42"
    if args.screen:
        seeds = [42, *range(1, args.screen)]
        rows = screen(web, chosen, args.topN, args.fetches, seeds)
        print(f"Rounds of {args.topN}, {args.fetches} fetches, {args.screen} tie orders (xxhash64 seeds "
              f"42, 1..{args.screen - 1}); {web.n_course} course pages. rec@K: recall at K pages of the web, "
              "suffix f: at K fetches; a crawl that never reaches K pages of the web counts its final recall "
              f"at K. web@Nf: pages of the web within N fetches.\n")
        print(screen_table(rows))
        output = rows
    else:
        output = {}
        for name, policy in chosen.items():
            start = time.time()
            crawl = Crawl(web, policy, args.topN, args.fetches, None if args.url_ties else 42).run()
            web.save()
            output[name] = crawl.measures()
            print(f"[{name}] {time.time() - start:.1f}s pages={output[name]['n_pages']} "
                  f"fetches={output[name]['n_fetches']}", file=sys.stderr, flush=True)
        print(f"Rounds of {args.topN}, {args.fetches} fetches, ties by {ties}; {web.n_course} course pages. "
              "rec@K/harv@K: K = pages of the web; suffix f: K = fetches; web@Nf: pages of the web "
              "within N fetches.\n")
        print(policy_table(output))
    if args.json:
        args.json.write_text(json.dumps(output))


if __name__ == "__main__":
    main()
