"""The PageRank engines' driver-side helpers: which engine ``scoring.engine = auto`` runs
(and what it costs to decide), and the driver engine's take of each page's URL."""
import numpy as np
import pyarrow as pa
import pytest

from crawlkit.scoring.pagerank import _pick_engine
from crawlkit.scoring.pagerank.common import LINK_BYTES, max_result_size
from crawlkit.scoring.pagerank.driver import _take_sorted


class Edges:
    """Stands for the prepared edges; counts how often they are counted."""
    def __init__(self, n: int):
        self.n, self.counted = n, 0

    def count(self) -> int:
        self.counted += 1
        return self.n


def test_a_known_bound_below_the_driver_limit_spares_counting_the_edges():
    edges = Edges(10)
    assert _pick_engine("auto", edges.count, driver_max_edges=100, edges_at_most=50) == "driver"
    assert edges.counted == 0


def test_a_bound_above_the_limit_counts_the_edges_themselves():
    # the link table is larger than the limit, but its prepared edges (deduplicated, no
    # self-links) may still fit: they are counted
    assert _pick_engine("auto", Edges(80).count, driver_max_edges=100, edges_at_most=500) == "driver"
    edges = Edges(120)
    assert _pick_engine("auto", edges.count, driver_max_edges=100, edges_at_most=500) == "distributed"
    assert edges.counted == 1
    assert _pick_engine("auto", Edges(120).count, driver_max_edges=100) == "distributed"


def test_a_named_engine_is_taken_as_is_and_a_bad_one_refused():
    edges = Edges(10**9)
    assert _pick_engine("distributed", edges.count, driver_max_edges=100) == "distributed"
    assert _pick_engine("driver", edges.count, driver_max_edges=100, edges_at_most=10**9) == "driver"
    assert edges.counted == 0
    with pytest.raises(ValueError, match="scoring.engine"):
        _pick_engine("fast", edges.count, driver_max_edges=100)


def test_taking_increasing_positions_chunk_by_chunk_equals_a_plain_take():
    urls = pa.chunked_array([pa.array(["a", "b", "c"]), pa.array([], pa.string()),
                             pa.array(["d"]), pa.array(["e", "f"])])
    for positions in ([0, 2, 3, 5], [3], [4, 5], [0, 1, 2, 3, 4, 5], []):
        positions = np.array(positions, dtype=np.int64)
        assert _take_sorted(urls, positions).to_pylist() == urls.take(pa.array(positions)).to_pylist()
    assert _take_sorted(pa.chunked_array([], pa.string()), np.zeros(0, dtype=np.int64)).to_pylist() == []


def test_auto_keeps_the_driver_engine_within_what_the_driver_may_collect(caplog):
    # 100 edges' hashes take 2,400 bytes: a 2,000-byte maxResultSize would fail the collect
    edges = Edges(100)
    with caplog.at_level("WARNING", logger="crawlkit.scoring.pagerank"):
        assert _pick_engine("auto", edges.count, driver_max_edges=1000, result_limit=2000) == "distributed"
    assert "maxResultSize" in caplog.text
    assert _pick_engine("auto", edges.count, driver_max_edges=1000, result_limit=100 * LINK_BYTES) == "driver"
    assert _pick_engine("auto", edges.count, driver_max_edges=1000, result_limit=0) == "driver"
    # a known bound is trusted only when its hashes fit too
    edges = Edges(50)
    assert _pick_engine("auto", edges.count, driver_max_edges=1000, edges_at_most=100,
                        result_limit=2000) == "driver"
    assert edges.counted == 1


def test_the_collect_limit_is_spark_s_setting_in_bytes(spark):
    # the test session keeps Spark's default, "1g"
    assert spark.sparkContext.getConf().get("spark.driver.maxResultSize", "1g") == "1g"
    assert max_result_size(spark) == 1024 ** 3
