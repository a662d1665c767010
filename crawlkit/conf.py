"""Configuration: every key declared once, with its default and description, in
conf/crawlkit-default.toml.

Precedence, lowest first: the defaults file, a site file, then ``key=value`` overrides
(the command line's ``--conf``). Unknown keys, wrongly typed values and numbers out of their
key's range are refused with an error naming the key and where it came from, so a typo never
silently does nothing (and ``fetcher.threads = -3`` never reaches a fetch task). A number is
at least 0 unless its key declares ``min`` (``max``: at most; ``above``: strictly more); a
key with ``choices`` takes one of them (each item of a list); ``nonempty`` refuses ``[]``.
Values that only mean something together (scorer names, AMH weights summing to 1, ordered
intervals) are checked once every layer is in, before any stage runs.

A :class:`Conf` is an immutable flat mapping of dotted keys (``"fetcher.threads"``) to plain
Python values, so it pickles cheaply to Spark executors.

Example::

    conf = load_conf(overrides={"fetcher.threads": 4})
    conf["fetcher.threads"]  # 4
"""
from __future__ import annotations

import json
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from crawlkit.paths import conf_dir, is_shipped, read_shipped, scheme_of

DEFAULTS_FILE = "crawlkit-default.toml"
SITE_FILE = "crawlkit-site.toml"


class ConfError(ValueError):
    """A configuration key or value that cannot be accepted."""


@dataclass(frozen=True)
class KeySpec:
    key: str
    default: Any
    description: str
    type: str
    min: float | None = None     # inclusive bounds of a number (min defaults to 0)
    max: float | None = None
    above: float | None = None   # exclusive lower bound
    choices: tuple[str, ...] | None = None   # the values a str (or each item of a list) may take
    nonempty: bool = False       # a list that must hold at least one item


# Pairs of keys whose values must be ordered: low <= high.
ORDERED = (("schedule.min_interval", "schedule.default_interval"),
           ("schedule.default_interval", "schedule.max_interval"),
           ("export.range_min", "export.range_max"),
           ("crawl.lock_heartbeat", "crawl.lock_expiry"))


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list[str]"
    if isinstance(value, dict):
        return "dict[str,str]"
    raise ConfError(f"unsupported default type {type(value).__name__}")


def load_specs(path: Path | None = None) -> dict[str, KeySpec]:
    """Read the declared keys from the defaults file."""
    path = path or conf_dir() / DEFAULTS_FILE
    raw = tomllib.loads(read_shipped(path).decode("utf-8"))
    specs: dict[str, KeySpec] = {}
    for section, entries in raw.items():
        for name, entry in entries.items():
            key = f"{section}.{name}"
            if not isinstance(entry, dict) or "default" not in entry or "description" not in entry:
                raise ConfError(f"{path}: {key} needs a default and a description")
            kind = entry.get("type") or _type_name(entry["default"])
            numeric = kind in ("int", "float")
            choices = entry.get("choices")
            specs[key] = KeySpec(key, entry["default"], entry["description"], kind,
                                 min=entry.get("min", 0 if numeric and "above" not in entry else None),
                                 max=entry.get("max"), above=entry.get("above"),
                                 choices=tuple(choices) if choices is not None else None,
                                 nonempty=bool(entry.get("nonempty", False)))
            _check_range(specs[key], entry["default"], str(path))
            _check_choices(specs[key], entry["default"], str(path))
    return specs


def _check_range(spec: KeySpec, value: Any, origin: str) -> None:
    if spec.type not in ("int", "float"):
        return
    bounds = []
    if spec.min is not None and value < spec.min:
        bounds.append(f">= {_bound(spec.min)}")
    if spec.above is not None and value <= spec.above:
        bounds.append(f"> {_bound(spec.above)}")
    if spec.max is not None and value > spec.max:
        bounds.append(f"<= {_bound(spec.max)}")
    if bounds or not math.isfinite(value):
        wanted = [f">= {_bound(spec.min)}"] if spec.min is not None else []
        wanted += [f"> {_bound(spec.above)}"] if spec.above is not None else []
        wanted += [f"<= {_bound(spec.max)}"] if spec.max is not None else []
        raise ConfError(f"{origin}: {spec.key} must be {' and '.join(wanted)}, got {value!r}")


def _bound(number: int | float) -> str:
    """A bound as written: an int whole (2147483647, not 2.14748e+09), a float short."""
    return str(number) if isinstance(number, int) else f"{number:g}"


def _check_choices(spec: KeySpec, value: Any, origin: str) -> Any:
    """``value`` with each choice spelled as declared (a choice matches in any case:
    ``spark.log_level = info`` is INFO, as Spark reads it)."""
    items = value if isinstance(value, list) else [value]
    if spec.nonempty and not items:
        raise ConfError(f"{origin}: {spec.key} must not be empty")
    if spec.choices is None:
        return value
    declared = {choice.lower(): choice for choice in spec.choices}
    spelled = [declared.get(item.lower()) if isinstance(item, str) else None for item in items]
    for item, choice in zip(items, spelled):
        if choice is None:
            raise ConfError(f"{origin}: {spec.key} must be one of {', '.join(spec.choices)}, got {item!r}")
    return spelled if isinstance(value, list) else spelled[0]


def _check_order(conf: "Conf") -> None:
    for low, high in ORDERED:
        if conf[low] > conf[high]:
            raise ConfError(f"{low} ({conf[low]!r}, {conf.origin_of(low)}) must not be above "
                            f"{high} ({conf[high]!r}, {conf.origin_of(high)})")


def _check_together(conf: "Conf") -> "Conf":
    """The checks no single value can make: run once every layer is applied, so a later
    layer may still mend what an earlier one set."""
    _check_order(conf)
    _check_scorer_names(conf)
    amh = [conf[f"focus.amh_{k}"] for k in "abc"]   # each in [0, 1] by its range
    if abs(sum(amh) - 1.0) > 1e-9:
        raise ConfError(f"focus.amh_a/b/c = {', '.join(map(str, amh))} ({conf.origin_of('focus.amh_a')}, "
                        f"{conf.origin_of('focus.amh_b')}, {conf.origin_of('focus.amh_c')}): "
                        "each in [0, 1], summing to 1")
    if conf["generate.policy"] == "hot_queue":
        # the queue is the URLs whose URL or anchors hold a topic word: without words it is
        # empty, and the crawl would be a plain score-ordered one that says it is focused
        if not conf["focus.words"]:
            raise ConfError(f"{conf.origin_of('generate.policy')}: generate.policy = hot_queue needs "
                            "focus.words (the topic the hot queue is built from)")
        if conf["schedule.kind"] == "change_rate":
            raise ConfError(f"{conf.origin_of('generate.policy')}: generate.policy = hot_queue does not "
                            "combine with schedule.kind = change_rate (its fetch list is ranked by "
                            "expected freshness gain)")
    personalization = conf["scoring.personalization"].strip()
    if personalization not in ("", "seeds") and not personalization.startswith("hosts:"):
        raise ConfError(f"{conf.origin_of('scoring.personalization')}: scoring.personalization must be "
                        f"empty, seeds or hosts:<comma list>, got {personalization!r}")
    proxy = conf["fetcher.proxy"]
    if proxy and (scheme_of(proxy) not in ("http", "https") or "://" not in proxy):
        raise ConfError(f"{conf.origin_of('fetcher.proxy')}: fetcher.proxy must be an http:// or "
                        f"https:// URL (http://host:port), got {proxy!r}")
    return conf


def _check_scorer_names(conf: "Conf") -> None:
    """Every metric a round computes or ranks by is a registered scorer (a typo would only
    fail after the round's fetch); ``score`` names the crawldb's ordering score."""
    from crawlkit.scoring.base import list_scorers   # late: the scorers import this module

    known = set(list_scorers())
    named = {"scoring.scorer": [conf["scoring.scorer"]],
             "generate.interleave": [n for n in conf["generate.interleave"] if n != "score"],
             "focus.interleave": [n for n in conf["focus.interleave"] if n != "score"],
             "scoring.combine": list(conf["scoring.combine"])}
    for key, names in named.items():
        for name in names:
            if name not in known:
                raise ConfError(f"{conf.origin_of(key)}: {key}: unknown scorer {name!r}; "
                                f"known: {', '.join(sorted(known))}")
    if conf["generate.policy"] == "interleave" and not conf["generate.interleave"] and not conf["focus.words"]:
        raise ConfError(f"{conf.origin_of('generate.interleave')}: generate.policy = interleave "
                        "needs generate.interleave (a list of metrics)")


def _coerce(spec: KeySpec, value: Any, origin: str, text: bool = True) -> Any:
    """Check a value against its key's type; ``text``: a string may spell another type (the
    command line's ``key=value``; a TOML file has types of its own)."""
    want = spec.type
    if isinstance(value, str) and want != "str":
        if not text:
            raise ConfError(f"{origin}: {spec.key} must be {want}, got {value!r}")
        value = _parse_text(spec, value, origin)
    ok = {
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "list[regex]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "dict[str,str]": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "dict[str,float]": lambda v: isinstance(v, dict) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values()),
    }[want]
    if not ok(value):
        raise ConfError(f"{origin}: {spec.key} must be {want}, got {value!r}")
    if want == "float":
        value = float(value)
    _check_range(spec, value, origin)
    value = _check_choices(spec, value, origin)
    if want == "list[regex]":
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfError(f"{origin}: {spec.key}: {pattern!r} is not a regex: {exc}") from None
    return value


def _parse_text(spec: KeySpec, text: str, origin: str) -> Any:
    want = spec.type
    try:
        if want == "bool":
            lowered = text.strip().lower()
            if lowered in ("true", "1", "yes", "on"):
                return True
            if lowered in ("false", "0", "no", "off"):
                return False
            raise ValueError(text)
        if want == "int":
            return int(text)
        if want == "float":
            return float(text)
        if want.startswith("list"):
            text = text.strip()
            if text.startswith("["):
                return json.loads(text)
            if want == "list[regex]":   # a comma belongs to the regex (a{1,3}): one pattern
                return [text] if text else []
            return [part.strip() for part in text.split(",") if part.strip()]
        if want.startswith("dict"):
            return json.loads(text)
    except ValueError as exc:
        raise ConfError(f"{origin}: {spec.key} must be {want}, got {text!r}") from exc
    return text


class Conf(Mapping[str, Any]):
    """An immutable, validated configuration."""

    def __init__(self, values: Mapping[str, Any], specs: Mapping[str, KeySpec],
                 origins: Mapping[str, str] | None = None):
        self._values = dict(values)
        self._specs = specs
        self._origins = dict(origins or {})   # key -> the file or option that set it

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise ConfError(f"unknown configuration key {key!r}") from None

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def section(self, name: str) -> dict[str, Any]:
        """The keys of one stage without their prefix, e.g. ``conf.section("urls")``."""
        prefix = name + "."
        return {k[len(prefix):]: v for k, v in self._values.items() if k.startswith(prefix)}

    def with_overrides(self, overrides: Mapping[str, Any] | None, origin: str = "override",
                       text: bool = True) -> "Conf":
        """A copy with ``overrides`` applied, each checked; ``origin`` names where they came
        from in errors; ``text``: strings may spell other types (see _coerce)."""
        values, origins = dict(self._values), dict(self._origins)
        for key, value in (overrides or {}).items():
            spec = self._specs.get(key)
            if spec is None:
                raise ConfError(f"{origin}: unknown configuration key {key!r}{_hint(key)}")
            values[key] = _coerce(spec, value, origin, text)
            origins[key] = origin
        return Conf(values, self._specs, origins)

    def origin_of(self, key: str) -> str:
        """Where ``key``'s value came from: a file, an option, or "default"."""
        return self._origins.get(key, "default")

    def explicit(self) -> set[str]:
        """Keys set by a site file, the command line or a caller (equal to the default or not)."""
        return set(self._origins)

    def describe(self, key: str) -> str:
        return self._specs[key].description

    def changed(self) -> dict[str, Any]:
        """Keys whose value differs from the default: what a stage logs as 'options in effect'."""
        return {k: v for k, v in self._values.items() if v != self._specs[k].default}

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __reduce__(self):
        return (Conf, (self._values, self._specs, self._origins))


def _hint(key: str) -> str:
    if key.startswith("spark.") and key.count(".") > 1:
        return (f" (a Spark setting: give it as spark.extra={{\"{key}\": \"...\"}} or to "
                "spark-submit's own --conf; docs/cluster.md)")
    return ""


def _flatten_site(raw: Mapping[str, Any], path: Path) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section, entries in raw.items():
        if not isinstance(entries, dict):
            raise ConfError(f"{path}: {section!r} must be a [section] table of keys")
        for name, value in entries.items():
            flat[f"{section}.{name}"] = value
    return flat


def site_file(explicit: str | os.PathLike | None = None) -> Path | None:
    """The site file in effect: explicit, then $CRAWLKIT_SITE, then conf/crawlkit-site.toml
    (on the disk, or in the zip spark-submit ships: scripts/cluster/package.sh puts conf/ in)."""
    given = str(explicit or os.environ.get("CRAWLKIT_SITE") or "")
    if given:
        if scheme_of(given) not in (None, "file"):
            raise ConfError(f"site configuration file {given}: crawlkit reads it before Spark starts, "
                            "so not from a URI; ship it with spark-submit --files and give its name, "
                            f"or put it in the zip as conf/{SITE_FILE} (docs/cluster.md)")
        return Path(re.sub(r"^file:(//)?", "", given, flags=re.IGNORECASE))
    default = conf_dir() / SITE_FILE
    return default if is_shipped(default) else None


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["fetcher.threads=4", ...]`` from the command line into a dict (values stay text)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfError(f"--conf expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


def load_conf(site: str | os.PathLike | None = None,
              overrides: Mapping[str, Any] | None = None,
              flags: Mapping[str, Mapping[str, Any]] | None = None) -> Conf:
    """Defaults < site file < overrides (``--conf``) < ``flags`` (the command line's own
    options, ``{"--topN": {"crawl.topN": 5}}``, named in errors as typed), validated."""
    specs = load_specs()
    conf = Conf({k: s.default for k, s in specs.items()}, specs)
    path = site_file(site)
    if path is not None:
        try:
            data = path.read_bytes() if site or os.environ.get("CRAWLKIT_SITE") else read_shipped(path)
            raw = tomllib.loads(data.decode("utf-8"))
        except FileNotFoundError:
            raise ConfError(f"site configuration file not found: {path}") from None
        except OSError as exc:     # a directory, no permission, ...
            raise ConfError(f"site configuration file {path}: {exc.strerror}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfError(f"{path}: not valid TOML: {exc}") from None
        conf = conf.with_overrides(_flatten_site(raw, path), origin=str(path), text=False)
    conf = conf.with_overrides(overrides, origin="--conf")
    for flag, values in (flags or {}).items():
        conf = conf.with_overrides(values, origin=flag)
    return _check_together(conf)


def make_conf(**overrides: Any) -> Conf:
    """Defaults plus keyword overrides, with ``__`` for the dot: ``make_conf(fetcher__threads=2)``.

    Ignores any site file, so tests and library callers get the same answer everywhere.
    """
    specs = load_specs()
    conf = Conf({k: s.default for k, s in specs.items()}, specs)
    return _check_together(conf.with_overrides({k.replace("__", "."): v for k, v in overrides.items()},
                                               origin="make_conf"))
