"""Fault rules: which URLs get which fault, from a faults file (TOML or JSON).

A rule is a table with a URL pattern, an optional seeded rate, and a fault kind
with its parameters (faults.py)::

    [[fault]]
    regex = '^http://www\\.example\\.edu/old/(.*)$'   # or: glob = "http://*/slow/*"
    kind = "redirect"
    hops = 3
    to = 'http://www.example.edu/new/\\1'

Rules are tried in file order; the first that applies wins. ``rate`` picks a share
of matching URLs by a per-URL coin (the same coin for every rule, so rules with
disjoint ``[offset, offset+rate)`` ranges never pick the same URL); ``per =
"request"`` flips a new coin per request instead; ``times = N`` applies the rule to
the first N matching requests of each URL only (e.g. a 503 that a retry gets past).
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .faults import KINDS, FaultKind
from .hashing import unit

_RULE_KEYS = {"glob", "regex", "rate", "offset", "per", "times", "kind"}


@dataclass
class FaultRule:
    kind: FaultKind
    params: dict
    pattern: re.Pattern
    uses_regex: bool
    rate: float = 1.0
    offset: float = 0.0
    per_request: bool = False
    times: int | None = None

    @classmethod
    def from_table(cls, table: dict) -> FaultRule:
        if ("glob" in table) == ("regex" in table):
            raise ValueError(f"fault rule {table}: give exactly one of 'glob' or 'regex'")
        kind = KINDS.get(table.get("kind", ""))
        if kind is None:
            raise ValueError(f"fault rule {table}: 'kind' must be one of {', '.join(sorted(KINDS))}")
        params = {k: v for k, v in table.items() if k not in _RULE_KEYS}
        try:
            kind.check(params)
        except (TypeError, ValueError) as error:
            raise ValueError(f"fault rule {table}: {error}") from None
        per = table.get("per", "url")
        if per not in ("url", "request"):
            raise ValueError(f"fault rule {table}: 'per' must be 'url' or 'request'")
        uses_regex = "regex" in table
        pattern = re.compile(table["regex"] if uses_regex else fnmatch.translate(table["glob"]))
        return cls(kind, params, pattern, uses_regex, float(table.get("rate", 1.0)), float(table.get("offset", 0.0)),
                   per == "request", table.get("times"))


class FaultRules:
    """An ordered list of rules and the per-URL request counts that ``per``/``times`` need."""

    def __init__(self, rules: list[FaultRule], seed: int = 0):
        self.rules = rules
        self.seed = seed
        self._seen: Counter[tuple[int, str]] = Counter()

    @classmethod
    def from_tables(cls, tables: list[dict], seed: int = 0) -> FaultRules:
        return cls([FaultRule.from_table(t) for t in tables], seed)

    @staticmethod
    def read_tables(path: str | Path) -> list[dict]:
        """Rule tables of a faults file: TOML ``[[fault]]`` tables, or JSON ``{"faults": [...]}`` or a list."""
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text) if str(path).endswith(".json") else tomllib.loads(text)
        if isinstance(data, dict):
            data = data.get("fault", data.get("faults", []))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of fault rules")
        return data

    def pick(self, url: str) -> tuple[FaultKind, dict] | None:
        """The fault for this request of ``url`` (a lookup key, see ``url_key``) and its parameters, or None."""
        for index, rule in enumerate(self.rules):
            match = rule.pattern.search(url) if rule.uses_regex else rule.pattern.match(url)
            if match is None:
                continue
            nth = 0
            if rule.per_request or rule.times is not None:
                nth = self._seen[index, url]
                self._seen[index, url] = nth + 1
                if rule.times is not None and nth >= rule.times:
                    continue
            if rule.rate < 1.0 or rule.offset > 0.0:
                coin = unit(self.seed, "fault", url, nth) if rule.per_request else unit(self.seed, "fault", url)
                if not rule.offset <= coin < rule.offset + rule.rate:
                    continue
            params = dict(rule.params)
            if rule.uses_regex and isinstance(params.get("to"), str):
                params["to"] = match.expand(params["to"])
            return rule.kind, params
        return None
