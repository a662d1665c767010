"""Freshness of fixed, adaptive and change-rate schedules over a simulated month of a changing web.

The web is the replay web's change model (crawlkit.replay.changes.ChangeModel, in process:
the same change times the replay server serves): PAGES pages whose change classes mix never /
1 day / 1 week. The crawler fetches every page once at day 0, then runs one round per
simulated day for DAYS days, each round fetching at most BUDGET pages, under each schedule:

* fixed: due pages (fetch_time <= now), best score first, interval = PAGES / BUDGET days
  (the interval that spends the budget exactly);
* adaptive: the same rule with crawlkit's adaptive interval (x(1+inc) unchanged, x(1-dec)
  changed, clamped to [min, max]);
* change_rate: crawlkit.stages.refetch's rule: held pages fetched >= min_interval ago, ranked
  by score x (1 - exp(-rate x age)), rate = Cho & Garcia-Molina's estimate from the page's
  change/check counts, top BUDGET.

The per-fetch bookkeeping is updatedb's (crawlkit.stages.updatedb.updated_entries: a fetch
compares signatures, change_count/check_count, next interval from crawlkit.schedule); the
decisions are the same formulas evaluated in plain Python/numpy instead of Spark (on the
loaded 2-core machine a Spark round takes minutes; 3 schedules x 30 rounds would take hours).

Freshness at time t = share of pages whose copy equals the page's current version (version
number from the change model); importance-weighted freshness weighs each page by its score
(a fixed Zipf importance, independent of the change class). Both are averaged over hourly
samples of days 1..DAYS.

    python scripts/bench/freshness.py [--pages 300] [--days 30] [--budget 60] [--seed 1] [--markdown]
"""
from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from crawlkit.replay.changes import ChangeModel

DAY = 86400.0
CHANGES = "0.4:never,0.3:1d,0.3:1w"


def estimated_rate(changes: int, checks: int, interval: float) -> float:
    """crawlkit.schedule.estimated_change_rate for one page."""
    return -math.log((checks - changes + 0.5) / (checks + 0.5)) / interval


class Schedule:
    def __init__(self, kind, pages, budget, low, high, inc=0.4, dec=0.2, oracle=None, gap_interval=False,
                 gain=False):
        self.kind, self.budget, self.low, self.high, self.gain = kind, budget, low, high, gain
        self.inc, self.dec, self.oracle, self.gap_interval = inc, dec, oracle, gap_interval
        self.default = pages / budget * DAY if kind == "fixed" else (pages / budget * DAY)

    def next_interval(self, interval, changed, changes, checks, gap):
        if self.kind == "fixed":
            return self.default
        if self.kind == "adaptive":
            new = interval * (1 - self.dec) if changed else interval * (1 + self.inc)
        else:
            i = gap if self.gap_interval else interval
            rate = estimated_rate(changes, checks, i)
            new = 1.0 / max(rate, 1.0 / self.high)
        return min(max(new, self.low), self.high)

    def rate(self, state, i):
        """refetch.change_rate: the estimate, prior 1/fetch_interval, floored at 1/max."""
        if self.oracle is not None:
            return max(self.oracle[i], 1.0 / self.high)
        if state["checks"][i] > 0:
            r = estimated_rate(state["changes"][i], state["checks"][i], state["interval"][i])
        else:
            r = 1.0 / state["interval"][i]
        return max(r, 1.0 / self.high)

    def pick(self, state, score, now):
        n = len(score)
        if self.kind in ("fixed", "adaptive"):
            due = [i for i in range(n) if state["fetch_time"][i] <= now]
            due.sort(key=lambda i: (-score[i], i))
            return due[: self.budget]
        held = [i for i in range(n) if state["fetched_at"][i] <= now - self.low]
        prio = {}
        for i in held:
            rate = self.rate(state, i)
            prio[i] = score[i] * (1 - math.exp(-rate * (now - state["fetched_at"][i])))
            if self.gain:   # times the expected share of the next round the new copy stays fresh
                prio[i] *= (1 - math.exp(-rate * DAY)) / (rate * DAY)
        held.sort(key=lambda i: (-prio[i], i))
        return held[: self.budget]


def simulate(schedule: Schedule, times: list[np.ndarray], score: np.ndarray, days: int,
             weight: np.ndarray | None = None):
    """(freshness, importance-weighted freshness, fetches); the schedule ranks by ``score``,
    the weighted freshness weighs by ``weight`` (default: ``score``)."""
    weight = score if weight is None else weight
    n = len(score)
    version = lambda i, t: int(np.searchsorted(times[i], t, side="right"))  # noqa: E731
    start = schedule.default
    state = {"held": [0] * n, "fetched_at": [0.0] * n, "interval": [start] * n,
             "fetch_time": [start] * n, "changes": [0] * n, "checks": [0] * n}
    samples_plain, samples_weighted, fetches = [], [], 0
    for day in range(1, days + 1):
        now = day * DAY
        for i in schedule.pick(state, score, now):
            v = version(i, now)
            changed = v != state["held"][i]
            gap = now - state["fetched_at"][i]
            state["checks"][i] += 1
            state["changes"][i] += int(changed)
            state["interval"][i] = schedule.next_interval(state["interval"][i], changed, state["changes"][i],
                                                          state["checks"][i], gap)
            state["fetch_time"][i] = now + state["interval"][i]
            state["held"][i], state["fetched_at"][i] = v, now
            fetches += 1
        for hour in range(24):
            t = now + hour * 3600.0
            fresh = np.array([state["held"][i] == version(i, t) for i in range(n)], dtype=float)
            samples_plain.append(fresh.mean())
            samples_weighted.append(float((fresh * weight).sum() / weight.sum()))
    return float(np.mean(samples_plain)), float(np.mean(samples_weighted)), fetches


def web(pages: int, seed: int, days: int):
    model = ChangeModel(CHANGES, seed)
    urls = [f"http://s{i % 10}.sim.test/p{i}.html" for i in range(pages)]
    horizon = (days + 1) * DAY
    times = [np.array(model.change_times(u, horizon)) for u in urls]
    rng = np.random.default_rng(seed)
    score = 1.0 / (1.0 + rng.permutation(pages))          # Zipf importance, random w.r.t. change class
    score = score / score.sum()
    rates = np.array([model.rate(u) for u in urls])
    return urls, times, score, rates, model


def run(pages=300, days=30, budget=60, seed=1):
    urls, times, score, rates, model = web(pages, seed, days)
    low, high = DAY, 30 * DAY
    rows = []
    for name, sched in (
            ("fixed", Schedule("fixed", pages, budget, low, high)),
            ("adaptive", Schedule("adaptive", pages, budget, low, high)),
            ("change_rate", Schedule("change_rate", pages, budget, low, high)),
            ("change_rate, estimator on actual check gaps", Schedule("change_rate", pages, budget, low, high,
                                                                       gap_interval=True)),
            ("change_rate, true rates (oracle bound)", Schedule("change_rate", pages, budget, low, high,
                                                                 oracle=rates)),
            ("change_rate, x expected fresh time until next round", Schedule("change_rate", pages, budget, low,
                                                                              high, gain=True))):
        plain, weighted, fetches = simulate(sched, times, score, days)
        rows.append((name, plain, weighted, fetches))
    # the same rule ranking by expected staleness alone (every page equally important)
    uniform = np.full(pages, 1.0 / pages)
    plain, weighted, fetches = simulate(Schedule("change_rate", pages, budget, low, high), times, uniform, days,
                                        weight=score)
    rows.append(("change_rate, staleness only (uniform scores)", plain, weighted, fetches))
    classes = {}
    for u in urls:
        iv = model.interval(u)
        key = "never" if iv is None else f"{iv / DAY:g}d"
        classes[key] = classes.get(key, 0) + 1
    return rows, classes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--days", type=int, default=30)
    p.add_argument("--budget", type=int, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    a = p.parse_args(argv)
    rows, classes = run(a.pages, a.days, a.budget, a.seed)
    print(f"# {a.pages} pages ({', '.join(f'{k}: {v}' for k, v in sorted(classes.items()))}), "
          f"{a.days} daily rounds of {a.budget} fetches, seed {a.seed}")
    if a.markdown:
        print("| schedule | freshness | importance-weighted freshness | fetches |")
        print("| --- | ---: | ---: | ---: |")
        for name, plain, weighted, fetches in rows:
            print(f"| {name} | {plain:.3f} | {weighted:.3f} | {fetches} |")
    else:
        print(f"{'schedule':52s} {'freshness':>10s} {'weighted':>10s} {'fetches':>8s}")
        for name, plain, weighted, fetches in rows:
            print(f"{name:52s} {plain:10.3f} {weighted:10.3f} {fetches:8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
