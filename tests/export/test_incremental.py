"""Incremental export: only documents whose content or boost changed since an older crawldb
version (read by Delta time travel), plus deletions, as Elasticsearch bulk actions."""
import math

from exporthelpers import crawldb_row, json_lines, parse_row

U = [f"http://p{i}.test/" for i in range(12)]
# Round 1 scores; the median of the exported pages is 5 in both rounds.
FIRST = [1, 2, 3, 5, 5, 5, 5, 5, 7, 8, 9]


def test_since_version_exports_changes_and_deletions(crawl, tmp_path):
    crawl.parse([parse_row(u) for u in U[:11]], segment="20260301000000")
    v1 = crawl.crawldb([crawldb_row(u, s / 100) for u, s in zip(U, FIRST)])

    # Round 2: the crawl grew, so every PageRank halves (boosts do not move), and:
    second = {u: s / 200 for u, s in zip(U, FIRST)}
    second[U[2]] = 7.2 / 200   # p2 gained links: boost sqrt(3/5) -> sqrt(7.2/5)
    second[U[9]] = 8.16 / 200  # p9 moved 2 %: boost moves 1 %, under export.min_change
    second[U[11]] = 9.5 / 200  # p11 is new
    rows = [crawldb_row(u, s) for u, s in second.items() if u != U[0]]
    rows.append(crawldb_row(U[0], second[U[0]], status="gone"))  # p0 is gone
    changed = {U[1]: "sig:p1 v2", U[3]: "sig:p3 v2"}  # p1 changed, p3 changed to noindex
    rows = [{**r, "signature": changed.get(r["url"], r["signature"])} for r in rows]
    crawl.parse([parse_row(U[1], signature=changed[U[1]], title="p1 v2"),
                 parse_row(U[3], signature=changed[U[3]], noindex=True), parse_row(U[11])],
                segment="20260302000000")
    v2 = crawl.crawldb(rows)

    out = tmp_path / "delta"
    counters = crawl.export(out=str(out), since_version=v1, export__format="elasticsearch")

    assert (counters["crawl_version"], counters["since_version"]) == (v2, v1)
    assert (counters["records"], counters["deletes"]) == (3, 2)
    lines = json_lines(str(out / "records"))
    docs = {doc["url"]: doc for doc in lines[1::2]}
    assert all(list(action) == ["index"] for action in lines[0::2])
    assert {u: round(d["boost"], 9) for u, d in docs.items()} == {
        U[1]: round(math.sqrt(2 / 5), 9), U[2]: 1.2, U[11]: round(math.sqrt(9.5 / 5), 9)}
    assert docs[U[1]]["title"] == "p1 v2"
    deletes = json_lines(str(out / "deletes"))
    assert sorted(deletes, key=str) == [{"delete": {"_index": "crawlkit", "_id": U[0]}},
                                        {"delete": {"_index": "crawlkit", "_id": U[3]}}]
