"""The replay web: sources, faults, robots.txt and the clock put together.

Routing of one request, first match wins:
1. a fault rule matching the URL (its ``base`` is everything below), except for ``/__trap/``
   URLs, which are the continuation of a fault (hop 2 of a redirect chain must not
   start a new chain because its URL still matches the rule's pattern);
2. ``/robots.txt``: the robots config for the host, else the sources, else the ``*`` entry, else 404;
3. ``/__trap/KIND/...``: a fault requested by URL;
4. the sources in command-line order (generated, graph and WARC webs);
5. 404.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

from .changes import ChangeModel, Clock
from .faults import KINDS, TRAP_PREFIX, FaultContext, FaultKind, trap_fault
from .generated import GeneratedWeb
from .graph import LinkGraph
from .messages import Request, Response, not_found, text_response
from .robots import RobotsConfig
from .rules import FaultRules
from .synthetic import SyntheticSite
from .urls import url_key
from .warc import WarcArchive


class Web:
    def __init__(self, sources: list, faults: FaultRules, robots: RobotsConfig, clock: Clock):
        self.sources = sources  # SyntheticSite and WarcArchive objects, tried in order
        self.faults = faults
        self.robots = robots
        self.clock = clock
        self._counter = itertools.count()

    def respond(self, request: Request) -> Response:
        # Rules see the lookup key, not the spelling asked for: `HTTP://H:80/x` is the page
        # `http://h/x`, and a fault must not be dodged by spelling its URL differently.
        picked = None if request.path.startswith(TRAP_PREFIX) else self.faults.pick(url_key(request.url))
        if picked is None:
            return self._page(request)
        kind, params = picked
        return self._apply(kind, params, request, lambda: self._page(request))

    def _page(self, request: Request) -> Response:
        if request.path == "/robots.txt":
            return (self.robots.respond(request.host) or self._from_sources(request)
                    or self.robots.default() or not_found())
        trap = trap_fault(request)
        if trap is not None:
            kind, params = trap
            return self._apply(kind, params, request, lambda: KINDS["page"].apply(FaultContext(request, not_found)))
        return self._from_sources(request) or not_found()

    def _apply(self, kind: FaultKind, params: dict, request: Request, base) -> Response:
        try:
            kind.check(params)  # rules were checked at load; trap URLs bring their own values
            response = kind.apply(FaultContext(request, base, self._counter), **params)
        except (TypeError, ValueError) as error:
            return text_response(f"bad fault parameters for {kind.name!r}: {error}\n", 400)
        return response if response.fault else replace(response, fault=kind.name)

    def _from_sources(self, request: Request) -> Response | None:
        key = url_key(request.url)
        for source in self.sources:
            handle = source.find(key)
            if handle is not None:
                return source.respond(handle, request, self.clock.now())
        return None

    def page_info(self, url: str) -> dict:
        """Ground truth for ``url`` at the current clock: source, change rate and times, links."""
        clock, key = self.clock.now(), url_key(url)
        for source in self.sources:
            handle = source.find(key)
            if handle is None:
                continue
            if isinstance(source, WarcArchive):
                moved = {"redirect": handle} if isinstance(handle, str) else {}   # a slash-toggled URL
                return {"url": url, "source": "warc", "clock": clock, "interval": None, "change_times": [], **moved}
            graph, changes = source.graph, source.changes
            version, _, etag = source.state(handle, clock)
            return {
                "url": graph.url(handle), "source": "generated" if isinstance(graph, GeneratedWeb) else "graph",
                "clock": clock, "interval": changes.interval(graph.url(handle)),
                "change_times": changes.change_times(graph.url(handle), clock), "version": version, "etag": etag,
                "topical": graph.is_topical(handle),
                "links": [graph.url(t) for t in source.links_at(handle, version)],
            }
        return {"url": url, "source": None, "clock": clock}


def open_sources(specs: list[str], changes: ChangeModel, seed: int = 0) -> list:
    """Source objects for SOURCE arguments: ``gen:...``, ``*.tsv[.gz]``, ``*.warc[.gz]``, or a
    folder holding ``links.tsv.gz`` and/or ``*.warc.gz`` files."""
    sources = []
    for spec in specs:
        path = Path(spec)
        if spec.startswith("gen:"):
            sources.append(SyntheticSite(GeneratedWeb(spec), changes, seed))
        elif path.is_dir():
            inner = sorted(str(p) for p in path.iterdir() if _kind_of(p.name))
            if not inner:
                raise ValueError(f"{spec}: no links.tsv(.gz) or .warc(.gz) files in this folder")
            sources.extend(open_sources(inner, changes, seed))
        elif _kind_of(path.name) == "graph":
            sources.append(SyntheticSite(LinkGraph.load(path), changes, seed))
        elif _kind_of(path.name) == "warc":
            sources.append(WarcArchive(path))
        else:
            raise ValueError(f"{spec}: not a source (gen:N[,...], *.tsv[.gz], *.warc[.gz] or a folder of them)")
    return sources


def _kind_of(name: str) -> str | None:
    if name.endswith((".tsv", ".tsv.gz")):
        return "graph"
    if name.endswith((".warc", ".warc.gz")):
        return "warc"
    return None


def load_web(specs: list[str], *, faults: str | Path | None = None, robots: str | Path | None = None,
             changes: str | None = None, seed: int = 0, clock: Clock | None = None) -> Web:
    """A Web from SOURCE arguments and optional faults/robots files, as the CLI builds it.

    Rules from the faults file come before those of generated webs, and robots
    entries from the robots file override theirs: explicit configuration wins.
    """
    change_model = ChangeModel(changes, seed) if changes else ChangeModel(seed=seed)
    sources = open_sources(specs, change_model, seed)
    generated = [s.graph for s in sources if isinstance(s, SyntheticSite) and isinstance(s.graph, GeneratedWeb)]
    rule_tables = FaultRules.read_tables(faults) if faults else []
    robots_config = RobotsConfig.load(robots) if robots else RobotsConfig()
    for web in generated:
        rule_tables += web.fault_rules()
        robots_config = robots_config.merged_under(web.robots())
    return Web(sources, FaultRules.from_tables(rule_tables, seed), robots_config, clock or Clock())
