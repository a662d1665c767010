"""How close does Adaptive OPIC's ranking get to PageRank's as a crawl goes on?

A seeded power-law web of 10,000 pages (out-degrees Zipf-like, targets by preferential
attachment), crawled greedily: each round the K known pages with the most OPIC cash are
fetched (refetches included, as OPIC intends), their out-links join the link table, new pages
join the crawldb with no cash, and crawlkit's OPIC scorer (the Spark code the job runs)
moves the cash. After rounds 5, 10 and 20 it reports Kendall's tau between OPIC's importance
and (a) PageRank of the full web, over the pages the crawler knows, and (b) PageRank of the
link table discovered so far (what the PageRank scorer would compute at that point).

Usage::

    .venv/bin/python scripts/bench/opic_vs_pagerank.py [--pages 10000] [--k 500] [--rounds 20]
"""
from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from crawlkit.conf import make_conf  # noqa: E402
from crawlkit.scoring import VIRTUAL_URL, ScoringContext, get_scorer  # noqa: E402
from crawlkit.scoring.pagerank.driver import power_iteration, transition_matrix  # noqa: E402
from crawlkit.spark import get_spark  # noqa: E402


def power_law_web(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (src, dst) of a seeded preferential-attachment web with Zipf-like out-degrees."""
    rng = np.random.default_rng(seed)
    outdeg = np.minimum(rng.zipf(2.0, size=n) + 2, 200)
    outdeg[rng.random(n) < 0.05] = 0                      # some dangling pages
    indeg = np.ones(n)
    src, dst = [], []
    for page in rng.permutation(n):
        k = int(outdeg[page])
        if not k:
            continue
        targets = rng.choice(n, size=k, replace=False, p=indeg / indeg.sum())
        targets = targets[targets != page]
        indeg[targets] += 1
        src.extend([page] * len(targets))
        dst.extend(targets.tolist())
    return np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)


def pagerank_np(src, dst, n, damping=0.85):
    matrix, dangling = transition_matrix(src, dst, n)
    x, _, _ = power_iteration(matrix, dangling, np.full(n, 1.0 / n), np.full(n, 1.0 / n),
                              damping, 1e-12, 1000)
    return x


def url(i: int) -> str:
    return f"http://h{i // 100}.test/p{i}.html"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=500, help="pages fetched per round")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    report_at = {5, 10, 20, args.rounds}

    n = args.pages
    src, dst = power_law_web(n, args.seed)
    true_pr = pagerank_np(src, dst, n)
    out_links = pd.DataFrame({"src": src, "dst": dst}).groupby("src")["dst"].apply(np.asarray)
    print(f"web: {n:,} pages, {len(src):,} links", flush=True)

    conf = make_conf(spark__master="local[2]", spark__shuffle_partitions=2,
                     spark__checkpoint_dir="/tmp/crawlkit-bench-ckpt")
    spark = get_spark(conf)
    scorer = get_scorer("opic")

    rng = np.random.default_rng(args.seed)
    seeds = rng.choice(n, size=args.seeds, replace=False)
    state = pd.DataFrame({"page": seeds, "opic_cash": 1.0 / args.seeds, "opic_history": 0.0,
                          "last_processed": pd.NaT, "depth": 0})
    virtual = {"opic_cash": 0.0, "opic_history": 0.0, "last_processed": pd.NaT}
    known_edges = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    fetched_ever: set[int] = set()
    now = datetime(2024, 1, 1)
    rows = []
    for rnd in range(1, args.rounds + 1):
        now += timedelta(days=1)
        batch = state.nlargest(args.k, "opic_cash")["page"].to_numpy()
        fetched_ever.update(batch.tolist())
        new_src = [np.full(len(out_links.get(p, [])), p) for p in batch if p in out_links.index]
        new_dst = [out_links[p] for p in batch if p in out_links.index]
        if new_src:
            s = np.concatenate([known_edges[0], *new_src])
            d = np.concatenate([known_edges[1], *new_dst])
            pairs = np.unique(np.stack([s, d], axis=1), axis=0)
            known_edges = pairs[:, 0], pairs[:, 1]
        discovered = np.setdiff1d(np.unique(known_edges[1]), state["page"].to_numpy())
        if len(discovered):
            state = pd.concat([state, pd.DataFrame({
                "page": discovered, "opic_cash": 0.0, "opic_history": 0.0,
                "last_processed": pd.NaT, "depth": 1})], ignore_index=True)

        db = pd.DataFrame({"url": [url(p) for p in state["page"]], "depth": state["depth"],
                           "opic_cash": state["opic_cash"], "opic_history": state["opic_history"],
                           "last_processed": state["last_processed"]})
        db.loc[len(db)] = [VIRTUAL_URL, -1, virtual["opic_cash"], virtual["opic_history"],
                           virtual["last_processed"]]
        crawldb = spark.createDataFrame(
            db, "url string, depth int, opic_cash double, opic_history double, last_processed timestamp"
        ).selectExpr("*", "cast(null as map<string,string>) as metadata")
        links = spark.createDataFrame(pd.DataFrame({
            "src": [url(p) for p in known_edges[0]], "dst": [url(p) for p in known_edges[1]]})
        ).selectExpr("src", "dst", "'h' as src_host", "'h' as dst_host", "cast(null as string) as anchor",
                     "false as nofollow")
        processed = spark.createDataFrame(pd.DataFrame({"url": [url(p) for p in batch]}))
        ctx = ScoringContext(spark, conf, now, crawldb=crawldb, links=links, processed=processed)
        out = scorer.score(ctx).toPandas().set_index("url")
        v = out.loc[VIRTUAL_URL]
        virtual = {"opic_cash": v.opic_cash, "opic_history": v.opic_history,
                   "last_processed": v.last_processed}
        urls = [url(p) for p in state["page"]]
        state["opic_cash"] = out.loc[urls, "opic_cash"].to_numpy()
        state["opic_history"] = out.loc[urls, "opic_history"].to_numpy()
        state["last_processed"] = out.loc[urls, "last_processed"].to_numpy()
        total = out["opic_cash"].sum()
        if rnd in report_at:
            pages = state["page"].to_numpy()
            importance = out.loc[urls, "score"].to_numpy()
            tau_true = kendalltau(importance, true_pr[pages]).statistic
            index = {p: i for i, p in enumerate(pages)}
            local = pagerank_np(np.array([index[p] for p in known_edges[0]]),
                                np.array([index[p] for p in known_edges[1]]), len(pages))
            tau_seen = kendalltau(importance, local).statistic
            fetched = np.array(sorted(fetched_ever))
            tau_fetched = kendalltau(out.loc[[url(p) for p in fetched], "score"].to_numpy(),
                                     true_pr[fetched]).statistic
            rows.append((rnd, len(pages), len(fetched), tau_true, tau_fetched, tau_seen, total))
            print(rows[-1], flush=True)

    print(f"\n{n:,}-page power-law web ({len(src):,} links), {args.seeds} seeds, top {args.k} "
          f"pages by cash fetched per round, opic_virtual_share = "
          f"{conf['scoring.opic_virtual_share']}, PageRank d = 0.85.\n")
    print("| rounds | pages known | pages fetched | tau vs full-web PageRank (known) "
          "| tau (fetched pages) | tau vs PageRank of discovered links | total cash |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r[0]} | {r[1]:,} | {r[2]:,} | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.3f} | {r[6]:.12f} |")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
