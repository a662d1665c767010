"""The fetcher's configuration, read once per partition into plain attributes.

Looking keys up in the conf mapping on every request would cost a dict lookup (and for a
:class:`crawlkit.conf.Conf`, a method call) per use on the hot path; a frozen dataclass read
once is both faster and the one place that names the keys.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from crawlkit.conf import ConfError, load_specs


@dataclass(frozen=True)
class FetchSettings:
    threads: int
    threads_per_host: int
    server_delay: float
    max_crawl_delay: float
    respect_robots: bool
    user_agent: str
    robots_agent: str
    proxy: str
    connect_timeout: float
    read_timeout: float
    page_deadline: float
    max_content: int
    max_header_bytes: int
    max_decompression_ratio: float
    follow_redirects: int
    accept_types: frozenset[str]
    time_limit: float
    max_retry_after: float
    max_host_pause: float
    max_exceptions_per_host: int
    error_backoff: float
    queue_capacity: int
    verify_tls: bool
    allow_private: tuple[str, ...]
    block_private: bool
    proxy_resolve_targets: bool
    url_settings: dict[str, Any]   # the [urls] keys, for normalizing redirect targets

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> "FetchSettings":
        """Accepts a :class:`Conf` or a plain dict; keys a plain dict lacks take their defaults."""
        get = _Lookup(conf)
        fetcher = {name: get(f"fetcher.{name}") for name in cls.__dataclass_fields__
                   if name != "url_settings"}
        fetcher["accept_types"] = frozenset(t.lower() for t in fetcher["accept_types"])
        fetcher["allow_private"] = tuple(fetcher["allow_private"])
        urls = {key[len("urls."):]: value for key, value in conf.items()
                if key.startswith("urls.")}
        return cls(**fetcher, url_settings=urls)


class _Lookup:
    """conf[key], falling back to the declared default (specs are read only if needed)."""

    def __init__(self, conf: Mapping[str, Any]):
        self._conf = conf
        self._defaults: dict[str, Any] | None = None

    def __call__(self, key: str) -> Any:
        try:
            return self._conf[key]
        except (KeyError, ConfError):
            if self._defaults is None:
                self._defaults = {k: s.default for k, s in load_specs().items()}
            return self._defaults[key]
