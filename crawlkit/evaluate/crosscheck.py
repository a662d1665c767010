"""Cross-checking a crawl's segments against the replay web's access log.

The segments say what the crawler believes it fetched; the access log says what the server
answered. They should agree: a page the log served with 2xx/304 but the segments do not
count as crawled (or the reverse) points at a fetcher bug, a lost segment or a mismatched
log. Requests for ``/robots.txt`` are not pages and are left out. URLs are compared by the
replay web's lookup key (``url_key``), so case and default-port spellings do not count as
mismatches.

Example::

    check = cross_check(order["url"], read_access_log("access.log"))
    check.log_only, check.segments_only, check.order_agreement
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from scipy.stats import kendalltau

from crawlkit.replay.urls import split_url, url_key

SHOWN = 10


@dataclass
class CrossCheck:
    log_only: list[str]        # served 2xx/304 per the log, not crawled per the segments
    segments_only: list[str]   # crawled per the segments, never served 2xx/304 per the log
    common: int
    order_agreement: float     # Kendall's tau of the common pages' positions (1 = same order)

    def summary(self) -> dict:
        return {"common": self.common, "log_only": len(self.log_only),
                "segments_only": len(self.segments_only),
                # None (JSON null) when fewer than two pages are common: tau is NaN, not JSON
                "order_agreement": None if math.isnan(self.order_agreement) else round(self.order_agreement, 6)}

    def markdown(self) -> str:
        lines = ["## Cross-check with the access log", "",
                 f"- pages in both: {self.common}; Kendall's tau of their order: {self.order_agreement:.4f}",
                 f"- served per the log, not crawled per the segments: {len(self.log_only)}",
                 f"- crawled per the segments, not served per the log: {len(self.segments_only)}"]
        for title, urls in (("log only", self.log_only), ("segments only", self.segments_only)):
            lines += [f"  - {title}: {url}" for url in urls[:SHOWN]]
            if len(urls) > SHOWN:
                lines.append(f"  - {title}: ... {len(urls) - SHOWN} more")
        return "\n".join(lines) + "\n"


def log_fetch_order(records: Iterable[dict]) -> list[str]:
    """URLs the log served successfully (GET, 2xx or 304), first time each, in arrival order."""
    seen: dict[str, str] = {}
    for record in records:
        status = record["status"]
        if record.get("method", "GET") != "GET" or not (200 <= status < 300 or status == 304):
            continue
        if split_url(record["url"])[1] == "/robots.txt":
            continue
        seen.setdefault(url_key(record["url"]), record["url"])
    return list(seen.values())


def cross_check(crawled_urls: Iterable[str], records: Iterable[dict]) -> CrossCheck:
    """Compare the crawl order from the segments with the access log's ``records``
    (as returned by :func:`crawlkit.replay.accesslog.read_access_log`, sorted by ``ts``)."""
    crawled = {url_key(url): url for url in crawled_urls}
    served = {url_key(url): url for url in log_fetch_order(records)}
    common = [key for key in crawled if key in served]
    log_position = {key: i for i, key in enumerate(served)}
    agreement = (kendalltau(np.arange(len(common)), [log_position[k] for k in common]).statistic
                 if len(common) > 1 else float("nan"))
    return CrossCheck(log_only=[url for key, url in served.items() if key not in crawled],
                      segments_only=[url for key, url in crawled.items() if key not in served],
                      common=len(common), order_agreement=float(agreement))
