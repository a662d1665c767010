"""inject's seeds file as operators give it: by URI, saved with a byte-order mark, missing;
and its counters under OPIC, whose virtual page is inserted beside the seeds."""
import pytest

from crawlkit.conf import ConfError, make_conf
from crawlkit.stages.inject import read_seed_file, run_inject


def test_a_seeds_file_is_read_by_path_or_by_uri_and_its_bom_dropped(spark, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttp://a.test/\r\nhttp://b.test/ score=2\n")
    expected = [b"http://a.test/", b"http://b.test/ score=2", b""]
    assert read_seed_file(spark, str(seeds)) == expected
    assert read_seed_file(spark, seeds.as_uri()) == expected          # file:///..., as hdfs://
    for missing in (str(tmp_path / "nope.txt"), (tmp_path / "nope.txt").as_uri()):
        with pytest.raises(ConfError, match="not found"):
            read_seed_file(spark, missing)


def test_inject_counts_seeds_not_the_virtual_page(spark, tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\nhttp://b.test/\n")
    conf = make_conf(crawl__dir=str(tmp_path / "crawl"), scoring__scorer="opic")
    first = run_inject(spark, str(seeds), conf, __import__("datetime").datetime(2024, 1, 1))
    assert (first["seeds"], first["injected"], first["already_known"]) == (2, 2, 0)
    again = run_inject(spark, str(seeds), conf, __import__("datetime").datetime(2024, 1, 2))
    assert (again["injected"], again["already_known"]) == (0, 2)
