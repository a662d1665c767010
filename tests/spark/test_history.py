"""A stage's question to a Delta history reads back only as far as its answer needs."""
import pytest

from crawlkit import storage

TAGS = ["generate:s1", "updatedb:s1", "score-opic:s1 score-backlinks:s1", "generate:s2", "other"]


@pytest.fixture(scope="module")
def tagged_table(spark, tmp_path_factory):
    """A table whose commits after its creation carry TAGS, oldest first (versions 1-5)."""
    path = str(tmp_path_factory.mktemp("history") / "t")
    spark.range(1).write.format("delta").save(path)
    for tag in TAGS:
        with storage.commit_tag(spark, tag):
            spark.range(1).write.format("delta").mode("append").save(path)
    return path


def test_recent_history_grows_its_window_until_answered(spark, tagged_table):
    commits = storage.recent_history(spark, tagged_table, lambda commits: "updatedb:s1" in storage.tags_in(commits),
                                     first=1, growth=2)
    # windows of 1, 2, then 4 commits: the fourth newest is updatedb:s1
    assert [c["version"] for c in commits] == [2, 3, 4, 5]
    assert commits[0]["userMetadata"] == "updatedb:s1"
    assert set(commits[0]) == set(storage.HISTORY_COLUMNS)


def test_recent_history_unanswered_reads_it_all(spark, tagged_table):
    commits = storage.recent_history(spark, tagged_table, lambda commits: False, first=1, growth=2)
    assert commits == storage.history(spark, tagged_table)
    assert [c["version"] for c in commits] == [0, 1, 2, 3, 4, 5]


def test_was_applied_since_a_segments_generate(spark, tagged_table):
    assert storage.was_applied(spark, tagged_table, "updatedb:s1", since=storage.generated_tag("s1"))
    assert storage.was_applied(spark, tagged_table, "score-backlinks:s1", since=storage.generated_tag("s1"))
    assert not storage.was_applied(spark, tagged_table, "updatedb:s2", since=storage.generated_tag("s2"))
    # no generate commit for s3: the whole history is searched
    assert not storage.was_applied(spark, tagged_table, "updatedb:s3", since=storage.generated_tag("s3"))
    assert not storage.was_applied(spark, str(tagged_table) + "-missing", "updatedb:s1", since="generate:s1")


def test_history_since_answers_and_dates_a_segments_generate(spark, tagged_table):
    commits = storage.history_since(spark, tagged_table, "updatedb:s2", storage.generated_tag("s2"))
    assert commits[-1]["version"] == 5 and not storage.applied_in(commits, "updatedb:s2")
    generate = next(c for c in commits if c["userMetadata"] == "generate:s2")
    assert storage.committed_at(commits, "generate:s2") == generate["timestamp"]
    assert storage.committed_at(commits[-1:], "generate:s1") is None
    every = storage.history(spark, tagged_table)
    assert storage.committed_at(every, "score-backlinks:s1") == every[3]["timestamp"]
    assert every[3]["timestamp"] <= every[4]["timestamp"]
