"""URL normalisation, host/domain helpers and the URL filter.

Everything here runs once per outlink, i.e. millions of times per crawl
cycle, so the common case (an ASCII URL without escapes or dot segments)
takes fast paths built on ``str`` methods and C-level set checks; the
slower paths run only for URLs that actually need them.
"""

from __future__ import annotations

import encodings.idna
import functools
import re
from collections import Counter
from urllib.parse import quote, unquote

import idna

__all__ = [
    "DEFAULT_SESSION_PARAMS",
    "UrlFilter",
    "UrlNormalizer",
    "domain_of",
    "host_of",
    "normalize",
]

DEFAULT_PORTS = {"http": "80", "https": "443", "ftp": "21"}

# Query/path parameter names that carry session ids: they make one page look
# like millions of URLs. Matched case-insensitively by exact name.
DEFAULT_SESSION_PARAMS = (
    "jsessionid",
    "phpsessid",
    "aspsessionid",
    "sessionid",
    "session_id",
    "sid",
    "cfid",
    "cftoken",
)

_UNRESERVED = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
)
_RESERVED = ":/?#[]@!$&'()*+,;="
# Characters that may stay literal in a normalised path/query/userinfo.
_LITERAL_OK = _UNRESERVED | frozenset(_RESERVED)
_HOST_OK = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-._")
_IPV6_OK = frozenset("0123456789abcdef:.")
_SCHEME_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-."
)
_HEX = "0123456789abcdefABCDEF"


def _escape_table() -> dict[str, str]:
    """Map every two-hex-digit escape body to its normal form (RFC 3986 6.2.2).

    Escapes of unreserved characters decode (``41`` -> ``A``); all others keep
    their escape with uppercase hex (``2f`` -> ``%2F``).
    """
    table = {}
    for hi in _HEX:
        for lo in _HEX:
            char = chr(int(hi + lo, 16))
            table[hi + lo] = char if char in _UNRESERVED else "%" + (hi + lo).upper()
    return table


_ESCAPES = _escape_table()
# Drop C0 controls and DEL anywhere in the URL (browsers do the same for
# tab/CR/LF; the other controls only ever come from broken markup).
_CONTROLS = dict.fromkeys(list(range(0x20)) + [0x7F])


def _quote_literal(text: str) -> str:
    """Percent-encode (UTF-8) what may not appear literally; keep reserved."""
    if text.isascii() and _LITERAL_OK.issuperset(text):
        return text
    return quote(text, safe=_RESERVED)


def _normalize_escapes(part: str) -> str:
    """Normalise percent-encoding of one URL component."""
    if "%" not in part:
        return _quote_literal(part)
    pieces = part.split("%")
    out = [_quote_literal(pieces[0])]
    for piece in pieces[1:]:
        escape = _ESCAPES.get(piece[:2])
        if escape is None:  # a stray '%' is data, not an escape
            out.append("%25")
            out.append(_quote_literal(piece))
        else:
            out.append(escape)
            out.append(_quote_literal(piece[2:]))
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for absolute paths; ``..`` above the root is dropped."""
    if "/." not in path:  # every dot segment starts with "/."
        return path
    segments = path.split("/")
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." means the directory "/a/"
    return "/" + "/".join(out)


def _split(url: str) -> tuple[str, str | None, str, str | None]:
    """Split a fragment-free URL as RFC 3986 appendix B does.

    Returns scheme (lowercased, "" if none), authority (None if absent),
    path and query (None if absent). Hand-written because urlsplit's
    validation and SplitResult building dominated the cost of normalize.
    """
    scheme = ""
    colon = url.find(":")
    if colon > 0 and url[0].isalpha() and _SCHEME_CHARS.issuperset(url[:colon]):
        scheme = url[:colon].lower()
        url = url[colon + 1 :]
    authority = None
    if url.startswith("//"):
        end = len(url)
        for sep in "/?":
            found = url.find(sep, 2)
            if 0 <= found < end:
                end = found
        authority, url = url[2:end], url[end:]
    path, has_query, query = url.partition("?")
    return scheme, authority, path, query if has_query else None


@functools.lru_cache(maxsize=1024)
def _split_base(base: str) -> tuple[str, str | None, str, str | None]:
    """Split a base once: a page resolves all of its links against it."""
    return _split(base.strip().translate(_CONTROLS).partition("#")[0])


def _resolve(ref: str, base: str) -> tuple[str, str | None, str, str | None]:
    """Resolve a reference against a base (RFC 3986 5.2.2), split as _split.

    Like browsers, ``http:foo`` with the base's scheme counts as relative.
    """
    scheme, authority, path, query = _split(ref)
    base_scheme, base_authority, base_path, base_query = _split_base(base)
    if scheme and (scheme != base_scheme or authority is not None):
        return scheme, authority, path, query
    if authority is not None:
        return base_scheme, authority, path, query
    if not path:
        return base_scheme, base_authority, base_path, base_query if query is None else query
    if not path.startswith("/"):  # RFC 3986 5.2.3 merge
        if base_authority is not None and not base_path:
            path = "/" + path
        else:
            path = base_path[: base_path.rfind("/") + 1] + path
    return base_scheme, base_authority, path, query


@functools.lru_cache(maxsize=65536)
def _normalize_host(host: str) -> str | None:
    """Lowercase, IDNA-encode and validate a host; None when invalid."""
    if "%" in host:
        host = unquote(host)
    if host.startswith("["):  # IPv6 literal
        host = host.lower()
        ok = len(host) > 2 and host.endswith("]") and _IPV6_OK.issuperset(host[1:-1])
        return host if ok else None
    if host.endswith("."):
        host = host[:-1]  # "example.com." is the same DNS name
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            try:  # IDNA 2003: laxer, accepts e.g. "_" and symbols
                host = encodings.idna.Codec().encode(host)[0].decode("ascii")
            except UnicodeError:
                return None
    host = host.lower()
    if not host or not _HOST_OK.issuperset(host) or ".." in host or host[0] == ".":
        return None
    return host


def _split_authority(authority: str) -> tuple[str, str, str]:
    """Split ``userinfo@host:port``; raises ValueError on a broken IPv6 literal."""
    userinfo, _, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or (end + 1 < len(hostport) and hostport[end + 1] != ":"):
            raise ValueError("invalid IPv6 literal")
        return userinfo, hostport[: end + 1], hostport[end + 2 :]
    host, _, port = hostport.partition(":")
    return userinfo, host, port


def _filter_query(query: str, drop: frozenset[str], sort: bool) -> str:
    params = [p for p in query.split("&") if p]
    if drop:
        params = [p for p in params if p.partition("=")[0].lower() not in drop]
    if sort:
        params.sort()
    return "&".join(params)


def _drop_path_params(path: str, drop: frozenset[str]) -> str:
    """Remove ``;jsessionid=...``-style matrix parameters from path segments."""
    segments = path.split("/")
    for i, segment in enumerate(segments):
        if ";" in segment:
            name, *params = segment.split(";")
            kept = [p for p in params if p.partition("=")[0].lower() not in drop]
            segments[i] = ";".join([name, *kept])
    return "/".join(segments)


def normalize(
    url: str,
    base: str | None = None,
    *,
    drop_params: frozenset[str] | set[str] | tuple[str, ...] = frozenset(),
    sort_query: bool = False,
) -> str | None:
    """Return the canonical absolute form of ``url`` or None if unusable.

    ``url`` is resolved against ``base`` (an absolute URL: the page URL or its
    ``<base href>``). Canonical means: scheme and host lowercased, IDN hosts in
    punycode, default port dropped, dot segments removed, empty path "/",
    percent-encoding normalised (unreserved decoded, other escapes uppercased,
    spaces/non-ASCII encoded as UTF-8, reserved characters left alone), no
    fragment, no empty "?", backslashes before the query read as "/" (as
    browsers do). ``drop_params`` names (lowercase) are removed from the
    query and from ``;name=value`` path parameters; ``sort_query`` sorts the
    query parameters. URLs without a host (``mailto:``, ``javascript:``,
    relative URLs without base) and malformed ones give None.
    """
    try:
        return _normalize(url, base, drop_params, sort_query)
    except (ValueError, UnicodeError, TypeError, AttributeError):
        return None


def _normalize(url, base, drop_params, sort_query) -> str | None:
    url = url.strip()
    if not url.isprintable():
        url = url.translate(_CONTROLS).strip()
    url = url.partition("#")[0]
    if "\\" in url:
        before, sep, after = url.partition("?")
        url = before.replace("\\", "/") + sep + after
    scheme, authority, path, query = _resolve(url, base) if base else _split(url)
    if not authority:
        return None
    userinfo, host, port = _split_authority(authority)
    host = _normalize_host(host)
    if host is None:
        return None
    if port:
        if not port.isdigit() or int(port) > 65535:
            return None
        port = str(int(port))
        if DEFAULT_PORTS.get(scheme) == port:
            port = ""
    path = _remove_dot_segments(_normalize_escapes(path)) if path else "/"
    drop = frozenset(drop_params)  # a no-op for the frozenset UrlNormalizer passes
    if drop and ";" in path:
        path = _drop_path_params(path, drop)
    if query:
        query = _normalize_escapes(query)
        if drop or sort_query:
            query = _filter_query(query, drop, sort_query)
    out = [scheme, "://"]
    if userinfo:
        out += [_normalize_escapes(userinfo), "@"]
    out.append(host)
    if port:
        out += [":", port]
    out.append(path)
    if query:
        out += ["?", query]
    return "".join(out)


class UrlNormalizer:
    """``normalize`` with the optional rules taken from a settings dict.

    Keys: ``session_params`` (names to drop, default DEFAULT_SESSION_PARAMS;
    ``[]`` disables) and ``sort_query`` (default False: reordering parameters
    is safe for dedup but some servers treat order as meaningful).
    Unknown keys are ignored so one settings section can feed UrlFilter too.
    """

    def __init__(self, settings: dict | None = None):
        settings = settings or {}
        params = settings.get("session_params", DEFAULT_SESSION_PARAMS)
        self.drop_params = frozenset(p.lower() for p in params or ())
        self.sort_query = bool(settings.get("sort_query", False))

    def __call__(self, url: str, base: str | None = None) -> str | None:
        return normalize(
            url, base, drop_params=self.drop_params, sort_query=self.sort_query
        )


def host_of(url: str) -> str | None:
    """Lowercase host of an absolute URL (IPv6 without brackets), or None.

    Meant for normalised URLs: no IDNA or validation, just the split.
    """
    try:
        return _host_in(_split(url.partition("#")[0])[1])
    except (TypeError, AttributeError):
        return None


def _host_in(authority: str | None) -> str | None:
    if not authority:
        return None
    try:
        host = _split_authority(authority)[1]
    except ValueError:
        return None
    return host.lower().strip("[]") or None


def _load_tldextract():
    """Offline extractor over the bundled PSL snapshot, or None if missing.

    ``suffix_list_urls=()`` forbids fetching the list and ``cache_dir=None``
    keeps Spark executors from writing a cache. Private suffixes are included
    (as browsers do), so ``a.github.io`` and ``b.github.io`` are different
    registrable domains, which is what per-site politeness wants.
    """
    try:
        import tldextract
    except ImportError:
        return None
    return tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
    )


_TLD_EXTRACT = _load_tldextract()
# Second-level labels that are public suffixes under most country codes
# (co.uk, com.au, ac.jp...): used only when tldextract is not installed.
_GENERIC_SLDS = frozenset("ac co com edu gov net org ne or go gob mil nic".split())


def _domain_heuristic(labels: list[str]) -> str:
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _GENERIC_SLDS:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


@functools.lru_cache(maxsize=65536)
def domain_of(host: str) -> str:
    """Registrable domain (eTLD+1) of a host; IPs and bare suffixes as is."""
    host = host.lower().rstrip(".")
    if not host or ":" in host or host.startswith("[") or host.replace(".", "").isdigit():
        return host
    if _TLD_EXTRACT is not None:
        return _TLD_EXTRACT.extract_str(host).top_domain_under_public_suffix or host
    return _domain_heuristic(host.split("."))


class _HostMatcher:
    """Match hosts against ``example.com`` (exact) / ``.example.com`` (the
    domain and all its subdomains) patterns in O(number of labels)."""

    def __init__(self, patterns):
        patterns = [_host_pattern(p.strip()) for p in patterns or () if p.strip()]
        self.exact = frozenset(p for p in patterns if not p.startswith("."))
        self.suffixes = frozenset(p for p in patterns if p.startswith("."))

    def __bool__(self):
        return bool(self.exact or self.suffixes)

    def matches(self, host: str) -> bool:
        if host in self.exact:
            return True
        if not self.suffixes:
            return False
        candidate = "." + host
        while candidate:
            if candidate in self.suffixes:
                return True
            dot = candidate.find(".", 1)
            candidate = candidate[dot:] if dot > 0 else ""
        return False


def _host_pattern(pattern: str) -> str:
    """A host pattern in the form hosts take after normalization (lowercase, punycode), so
    ``bücher.de`` matches ``xn--bcher-kva.de``; a pattern that is no valid host stays as
    written (lowercased) and matches nothing."""
    dot = "." if pattern.startswith(".") else ""
    host = _normalize_host(pattern[len(dot):])
    return dot + host if host else pattern.lower()


def _compile_any(patterns) -> re.Pattern | None:
    """One alternation instead of N searches (so no backreferences across)."""
    patterns = [p for p in patterns or () if p]
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns))


class UrlFilter:
    """Accept/reject normalised absolute URLs, naming the rejection reason.

    Settings (missing keys take the defaults; a ``None`` limit disables it):
    ``schemes`` ["http", "https"]; ``include`` / ``exclude`` regex lists
    (``re.search``; exclude wins; empty include accepts all); ``max_length``
    2048; ``max_path_depth`` 16 non-empty segments; ``hosts_allow`` /
    ``hosts_deny`` (``example.com`` exact, ``.example.com`` domain and
    subdomains; deny wins; empty allow accepts all); ``max_repeated_segments``
    3 (a segment occurring more often is a crawler trap such as
    ``/a/b/a/b/a/b/a/``); ``max_query_params`` 32.

    ``check`` returns None when accepted, else one of: "invalid", "too_long",
    "scheme", "host_denied", "host_not_allowed", "too_deep",
    "repeated_segments", "query_too_long", "excluded", "not_included".
    Cheap checks run first; the regexes last.
    """

    REASONS = (
        "invalid",
        "too_long",
        "scheme",
        "host_denied",
        "host_not_allowed",
        "too_deep",
        "repeated_segments",
        "query_too_long",
        "excluded",
        "not_included",
    )

    def __init__(self, settings: dict | None = None):
        settings = settings or {}
        self.schemes = frozenset(s.lower() for s in settings.get("schemes", ("http", "https")))
        self.include = _compile_any(settings.get("include"))
        self.exclude = _compile_any(settings.get("exclude"))
        self.max_length = settings.get("max_length", 2048)
        self.max_path_depth = settings.get("max_path_depth", 16)
        self.hosts_allow = _HostMatcher(settings.get("hosts_allow"))
        self.hosts_deny = _HostMatcher(settings.get("hosts_deny"))
        self.max_repeated_segments = settings.get("max_repeated_segments", 3)
        self.max_query_params = settings.get("max_query_params", 32)

    def check(self, url: str) -> str | None:
        if not url:
            return "invalid"
        if self.max_length is not None and len(url) > self.max_length:
            return "too_long"
        scheme, authority, path, query = _split(url.partition("#")[0])
        if scheme not in self.schemes:
            return "scheme"
        host = _host_in(authority)
        if not host:
            return "invalid"
        reason = self.check_host(host) or self._check_path(path)
        if reason:
            return reason
        if self.max_query_params is not None and query:
            if query.count("&") + 1 > self.max_query_params:
                return "query_too_long"
        if self.exclude is not None and self.exclude.search(url):
            return "excluded"
        if self.include is not None and not self.include.search(url):
            return "not_included"
        return None

    def check_host(self, host: str) -> str | None:
        """Why ``hosts_deny`` / ``hosts_allow`` refuse ``host`` (None: they do not)."""
        if self.hosts_deny and self.hosts_deny.matches(host):
            return "host_denied"
        if self.hosts_allow and not self.hosts_allow.matches(host):
            return "host_not_allowed"
        return None

    def _check_path(self, path: str) -> str | None:
        segments = [s for s in path.split("/") if s]
        if self.max_path_depth is not None and len(segments) > self.max_path_depth:
            return "too_deep"
        limit = self.max_repeated_segments
        if limit is not None and len(segments) > limit:
            if Counter(segments).most_common(1)[0][1] > limit:
                return "repeated_segments"
        return None

    def accepts(self, url: str) -> bool:
        return self.check(url) is None
