"""The export directory: a re-export replaces an earlier export only once it is complete."""
import os

import pytest

import crawlkit.export.job as job


def listing(directory):
    return sorted(os.path.relpath(os.path.join(d, f), directory) for d, _, fs in os.walk(directory) for f in fs)


def test_a_failed_re_export_leaves_the_earlier_export_intact(shared_crawl, tmp_path, monkeypatch):
    out = tmp_path / "solr"
    first = shared_crawl.export(out=str(out), export__format="solr")
    before = {name: (out / name).read_bytes() for name in listing(out)}
    assert "_export.json" in before and any(n.startswith("records/part-") for n in before)

    def lost(*_args, **_kwargs):
        raise RuntimeError("simulated executor loss")
    monkeypatch.setattr(job, "write_records", lost)
    with pytest.raises(RuntimeError, match="simulated executor loss"):
        shared_crawl.export(out=str(out), export__format="solr")

    assert {name: (out / name).read_bytes() for name in listing(out)} == before
    assert os.listdir(tmp_path) == ["solr"]  # no staging directory left behind
    monkeypatch.undo()
    again = shared_crawl.export(out=str(out), export__format="solr")
    assert again == first and os.listdir(tmp_path) == ["solr"]
