"""End to end: an export loaded into Lucene, the library under Elasticsearch and Solr.

Elasticsearch indexes a ``rank_feature`` field, and Solr a ``RankField``, as a Lucene
``FeatureField``; their rank_feature / ``{!rank}`` queries are FeatureField's saturation query.
lucene/RankFeatureSearch.java makes those same calls on the bulk (Elasticsearch) and update
(Solr) files of the shared export (exporthelpers.PAGES): two pages with the same title tie
on text alone, and the boost decides. The Lucene and Jackson jars come from lucene/pom.xml,
resolved by scripts/setup.sh into .jars/lucene/; the program runs with ``java`` in
source-file mode (no build step).
"""
import shutil
import subprocess
from pathlib import Path

import pytest

from exporthelpers import HIGH, LOW, part_files

from crawlkit.paths import project_home

JARS = project_home() / ".jars" / "lucene"
PROGRAM = Path(__file__).parent / "lucene" / "RankFeatureSearch.java"

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or not list(JARS.glob("lucene-core-*.jar")),
    reason="needs java and the Lucene jars in .jars/lucene/ (scripts/setup.sh resolves them)")


def search(term: str, files: list[str]) -> dict[str, list[tuple[str, float]]]:
    """Run the Lucene program: {"text": hits of the term alone, "ranked": with the feature}."""
    done = subprocess.run(["java", "-cp", f"{JARS}/*", str(PROGRAM), term, *files],
                          capture_output=True, text=True, timeout=120, check=True)
    hits = {"text": [], "ranked": []}
    for line in done.stdout.splitlines():
        label, doc_id, score = line.split("\t")
        hits[label].append((doc_id, float(score)))
    return hits


@pytest.mark.parametrize("fmt", ["elasticsearch", "solr"])
def test_the_higher_boost_ranks_first(exported, fmt):
    hits = search("ranking", part_files(str(exported[fmt][0] / "records")))

    text, ranked = dict(hits["text"]), dict(hits["ranked"])
    assert set(text) == set(ranked) == {LOW, HIGH}
    assert text[LOW] == text[HIGH]  # equal pages: text alone ties
    assert [doc_id for doc_id, _ in hits["ranked"]] == [HIGH, LOW]
    assert ranked[HIGH] > ranked[LOW] > text[LOW]
