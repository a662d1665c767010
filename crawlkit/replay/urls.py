"""The few URL operations the replay web needs, kept nearly trivial on purpose.

Pages are looked up by the URL the crawler asked for, so normalising more than
what makes two spellings the same URL (RFC 3986 6.2.2: scheme/host case, default
port, case of escapes, escaped unreserved characters) would hide crawler bugs the
replay web is meant to expose (e.g. a crawler that fails to resolve ``../`` would
still hit). A backslash, which no client can send, is keyed as the ``%5C`` clients
send for it, and a stray ``%`` as ``%25``.
"""

from __future__ import annotations

from urllib.parse import parse_qsl


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Two hex digits (either case) -> the escape's normal form: the character if unreserved, else upper-case hex.
_ESCAPES = {f"{hi}{lo}": chr(int(hi + lo, 16)) if chr(int(hi + lo, 16)) in _UNRESERVED else f"%{hi}{lo}".upper()
            for hi in "0123456789abcdefABCDEF" for lo in "0123456789abcdefABCDEF"}


def url_key(url: str) -> str:
    """Lookup key of ``url``: lowercase scheme and host, no ``:80``, no fragment, ``/`` for an
    empty path, percent-escapes normalised (see :func:`normalize_escapes`)."""
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
    tail = normalize_escapes(rest[cut:])
    if not tail.startswith("/"):
        tail = "/" + tail
    return f"{scheme.lower()}://{host}{tail}"


def normalize_escapes(text: str) -> str:
    """RFC 3986 6.2.2: upper-case hex in escapes, escaped unreserved characters decoded; a
    backslash as ``%5C`` and a ``%`` that starts no escape as ``%25``, as clients send them."""
    if "\\" in text:
        text = text.replace("\\", "%5C")
    if "%" not in text:
        return text
    first, *pieces = text.split("%")
    out = [first]
    for piece in pieces:
        escape = _ESCAPES.get(piece[:2])
        out.append("%25" + piece if escape is None else escape + piece[2:])
    return "".join(out)


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
