"""A crawl: inject once, then rounds of [sitemaps ->] generate -> fetch -> parse -> updatedb -> dedup -> score.

Time comes from a ``clock`` callable so tests and simulations drive it; the CLI passes the
wall clock. Each stage's counters and duration are collected into the round summary.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from pyspark.sql import SparkSession

from crawlkit import storage
from crawlkit.conf import Conf
from crawlkit.spark import job_group
from crawlkit.stages.dedup import run_dedup
from crawlkit.stages.evict import run_evict
from crawlkit.stages.fetch import run_fetch
from crawlkit.stages.generate import new_segment_name, run_generate
from crawlkit.stages.inject import run_inject
from crawlkit.stages.maintain import maintenance_due, run_maintain
from crawlkit.stages.parse import run_parse
from crawlkit.stages.segment_pruning import finish_interrupted
from crawlkit.stages.sitemaps import run_sitemaps
from crawlkit.stages.updatedb import run_updatedb


@dataclass
class RoundReport:
    segment: str | None
    counters: dict = field(default_factory=dict)   # stage -> counters
    seconds: dict = field(default_factory=dict)    # stage -> duration
    resumed_from: str | None = None                # "fetch" or "score" when it continued a dead round


def _timed(report: RoundReport, stage: str, fn, spark: SparkSession, *args):
    started = time.perf_counter()
    with job_group(spark, stage, report.segment):
        result = fn(spark, *args)
    report.seconds[stage] = round(time.perf_counter() - started, 3)
    report.counters[stage] = result
    return result


def run_round(spark: SparkSession, conf: Conf, now: datetime, log: Callable[[str], None] = print) -> RoundReport:
    """One round; returns an empty report (segment None) when nothing is due.

    A segment left unfinished by a round that died (crawlkit.resume) is continued first, and
    that is the round: its fetch resumes from the spilled results, the later stages are
    idempotent. Otherwise (after the sitemaps of the hosts due for it, under
    ``sitemaps.each_round``) generate writes a new segment.
    """
    from crawlkit.resume import resumable

    finish_interrupted(spark, conf["crawl.dir"])   # a maintain killed while pruning segments
    unfinished = resumable(spark, conf, now, log)
    if unfinished is not None:
        report = RoundReport(segment=unfinished.segment, resumed_from=unfinished.stage)
        log(f"resuming segment {unfinished.segment} from {unfinished.stage} "
            f"({unfinished.locked} URLs locked by it)" if unfinished.stage == "fetch" else
            f"resuming segment {unfinished.segment}: applied, not yet scored")
        stages = ("fetch", "parse", "updatedb", "dedup", "score") if unfinished.stage == "fetch" \
            else ("dedup", "score")
        return _finish(spark, conf, now, report, stages, log)
    report = RoundReport(segment=None)
    if conf["sitemaps.each_round"]:   # the hosts due for it; what they list is generated below
        _timed(report, "sitemaps", run_sitemaps, spark, conf, now)
    generated = _timed(report, "generate", run_generate, spark, conf, now, new_segment_name(spark, conf, now))
    segment = generated["segment"]
    if segment is None:
        return report
    report.segment = segment
    if "sitemaps" in report.counters:   # beside the round's other stages' counters, for `crawlkit report`
        storage.write_stats(spark, conf["crawl.dir"], segment, "sitemaps", report.counters["sitemaps"])
    return _finish(spark, conf, now, report, ("fetch", "parse", "updatedb", "dedup", "score"), log)


def _parse(spark: SparkSession, conf: Conf, segment: str, report: RoundReport) -> dict:
    """The round's parse stage: nothing left to do when the fetch tasks parsed (fetcher.parse)."""
    return run_parse(spark, conf, segment, report.counters.get("fetch"))


def _finish(spark: SparkSession, conf: Conf, now: datetime, report: RoundReport, stages, log) -> RoundReport:
    """The stages of the round after generate; round.json, written last, marks it finished."""
    from crawlkit.scoring.job import run_round_scoring

    segment = report.segment
    run = {"fetch": (run_fetch, spark, conf, now, segment),
           "parse": (_parse, spark, conf, segment, report),
           "updatedb": (run_updatedb, spark, conf, now, segment),
           "dedup": (run_dedup, spark, conf, segment),
           "score": (run_round_scoring, spark, conf["crawl.dir"], conf, now, segment),
           "evict": (run_evict, spark, conf, now, segment)}
    if conf["crawl.buffer_pages"] > 0 and "score" in stages:
        stages = (*stages, "evict")   # the buffer follows the fresh scores (idempotent, tagged)
    for stage in stages:
        _timed(report, stage, *run[stage])
    # Durable stage durations and options for `crawlkit report` (the counters are in _stats already).
    storage.write_stats(spark, conf["crawl.dir"], segment, "round",
                        {"segment": segment, "seconds": report.seconds, "options": conf.changed(),
                         "resumed_from": report.resumed_from})
    log(f"round {segment}: " + ", ".join(f"{k} {v:.1f}s" for k, v in report.seconds.items()))
    if maintenance_due(spark, conf):   # after the round is marked finished: a crash here loses no round
        _timed(report, "maintain", run_maintain, spark, conf, now)
        log(f"maintain: {report.seconds['maintain']:.1f}s")
    return report


def run_crawl(spark: SparkSession, conf: Conf, seeds: str | None, rounds: int,
              clock: Callable[[], datetime], log: Callable[[str], None] = print) -> list[RoundReport]:
    """Inject the seeds (if given), then up to ``rounds`` rounds; stops early when nothing is
    due or when crawl.max_pages (crawl-and-stop) is reached.

    The budget counts the pages this call fetched (``fetched_now``): a resumed round's pages
    that a dead process already fetched were that process's, so they do not end this crawl a
    round early."""
    reports = []
    _inject(spark, conf, seeds, clock(), log)
    fetched_total = 0
    for _ in range(rounds):
        report = run_round(spark, _within_budget(conf, fetched_total), clock(), log)
        if report.segment is None:
            log("nothing due: crawl finished")
            break
        reports.append(report)
        fetched_total += pages_fetched_now(report)
        if _budget_spent(conf, fetched_total, log):
            break
    return reports


def pages_fetched_now(report: RoundReport) -> int:
    """Pages the round's fetch stage fetched in this process (0 when it only scored)."""
    fetch = report.counters.get("fetch", {})
    return fetch.get("fetched_now", fetch.get("pages", 0))


def _budget_spent(conf: Conf, fetched_total: int, log) -> bool:
    """Crawl and stop: whether this command has requested crawl.max_pages pages."""
    if conf["crawl.max_pages"] and fetched_total >= conf["crawl.max_pages"]:
        log(f"crawl-and-stop: {fetched_total} pages fetched")
        return True
    return False


def _within_budget(conf: Conf, fetched_total: int) -> Conf:
    """Crawl and stop: the last round generates only what is left of crawl.max_pages."""
    limit = conf["crawl.max_pages"]
    if not limit:
        return conf
    left = limit - fetched_total
    top_n = conf["crawl.topN"]
    return conf.with_overrides({"crawl.topN": left if top_n <= 0 else min(top_n, left)})


def _inject(spark: SparkSession, conf: Conf, seeds: str | None, now: datetime, log) -> None:
    if not seeds:
        return
    counters = run_inject(spark, seeds, conf, now)
    log(f"inject: {counters['injected']} new, {counters['updated']} known URLs updated, "
        f"{counters['bad_lines']} bad lines, {counters['repeated_lines']} repeated")
    for problem in (counters["errors"] + counters["repeats"])[:20]:
        log(f"  seeds {problem}")


def run_every(spark: SparkSession, conf: Conf, seeds: str | None, every: float,
              until: datetime | None, rounds: int | None, clock: Callable[[], datetime],
              sleep: Callable[[float], None], log: Callable[[str], None] = print) -> list[RoundReport]:
    """A recrawl loop: one round every ``every`` seconds until ``until``, ``rounds`` rounds or
    ``crawl.max_pages`` pages fetched by the loop.

    Rounds start on a fixed grid (start, start + every, ...). A round that overruns its slot
    (or a machine that slept) skips the slots already past and waits for the next one: it
    never starts a burst of rounds back to back to catch up. Rounds with nothing due are kept
    in the result (segment None) so the caller sees the loop kept time.
    """
    if every <= 0:
        raise ValueError(f"--every must be a positive duration, got {every} s")
    _inject(spark, conf, seeds, clock(), log)
    reports: list[RoundReport] = []
    start = next_start = clock()
    fetched_total = 0
    while rounds is None or len(reports) < rounds:
        wait = (next_start - clock()).total_seconds()
        if wait > 0:
            sleep(wait)
        began = clock()
        if until is not None and began >= until:
            break
        report = run_round(spark, _within_budget(conf, fetched_total), began, log)
        reports.append(report)
        fetched_total += pages_fetched_now(report)
        if _budget_spent(conf, fetched_total, log):
            break
        slots = (clock() - start).total_seconds() // every + 1   # the first slot not yet begun
        skipped = slots - (next_start - start).total_seconds() // every - 1
        if skipped > 0:
            log(f"round {report.segment} overran: {int(skipped)} slot(s) of {every:g} s skipped")
        next_start = start + timedelta(seconds=slots * every)
    return reports
