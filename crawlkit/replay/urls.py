"""The few URL operations the replay web needs, kept trivial on purpose.

Pages are looked up by the URL the crawler asked for, so normalising more than
the scheme/host case and the default port would hide crawler bugs the replay web
is meant to expose (e.g. a crawler that fails to resolve ``../`` would still hit).
"""

from __future__ import annotations

from urllib.parse import parse_qsl


def url_key(url: str) -> str:
    """Lookup key of ``url``: lowercase scheme and host, no ``:80``, no fragment, ``/`` for an empty path."""
    url = url.partition("#")[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = len(rest)
    for mark in "/?":
        at = rest.find(mark)
        if 0 <= at < cut:
            cut = at
    host = rest[:cut].lower()
    if host.endswith(":80") and scheme.lower() == "http":
        host = host[:-3]
    tail = rest[cut:]
    if not tail.startswith("/"):
        tail = "/" + tail
    return f"{scheme.lower()}://{host}{tail}"


def split_url(url: str) -> tuple[str, str, str]:
    """``(host, path, query)`` of an absolute URL, host lowercase without ``:80``."""
    rest = url_key(url).partition("://")[2]
    host, slash, target = rest.partition("/")
    path, _, query = ("/" + target).partition("?")
    return host, path, query


def query_params(query: str) -> dict[str, str]:
    """Query parameters as a dict (last value wins), for trap and control URLs."""
    return dict(parse_qsl(query, keep_blank_values=True))


def key_variants(key: str) -> tuple[str, ...]:
    """Keys to try after ``key`` misses: the other scheme, the trailing slash toggled, then both.

    Archived URLs often differ from links only by ``https`` or a final ``/``; both
    are the same page on almost every server, so matching them is the least surprising.
    """
    scheme, _, rest = key.partition("://")
    other_scheme = {"http": "https", "https": "http"}.get(scheme, scheme)
    host, _, path = rest.partition("/")  # path without its leading "/"; empty for the root
    candidates = [f"{other_scheme}://{rest}"]
    if path and "?" not in path:
        toggled = f"{host}/{path[:-1] if path.endswith('/') else path + '/'}"
        candidates += [f"{scheme}://{toggled}", f"{other_scheme}://{toggled}"]
    return tuple(dict.fromkeys(c for c in candidates if c != key))
