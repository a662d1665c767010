"""A graph web loaded from ``links.tsv(.gz)``: page ids, raw URLs and out-links in CSR form.

1.5 million links must load in seconds and little memory, so links live in two numpy
arrays (``offsets``, ``targets``) and each URL string is stored once; the raw URL
is kept so that a page's ``<a href>`` values are byte for byte those of the file.
"""

from __future__ import annotations

import gzip
from array import array
from pathlib import Path

import numpy as np

from .urls import url_key


def open_text(path: str | Path, mode: str = "rt"):
    """Open a UTF-8 text file, gzip-compressed when its name ends in ``.gz``."""
    if str(path).endswith(".gz"):
        return gzip.open(path, mode, compresslevel=6, encoding="utf-8", newline="\n")
    return open(path, mode, encoding="utf-8", newline="\n")


class LinkGraph:
    """Pages (ids ``0..n-1``) and their out-links in file order, duplicates kept."""

    topic: tuple[str, ...] = ()

    def __init__(self, urls: list[str], offsets: np.ndarray, targets: np.ndarray):
        self.urls = urls
        self.offsets = offsets
        self.targets = targets
        self._ids: dict[str, int] = {}
        for i, raw in enumerate(urls):
            self._ids.setdefault(url_key(raw), i)

    @classmethod
    def load(cls, path: str | Path) -> LinkGraph:
        """Read ``src<TAB>dst`` lines; blank lines and lines starting with ``#`` are skipped."""
        ids: dict[str, int] = {}
        src, dst = array("i"), array("i")
        with open_text(path) as lines:
            for number, line in enumerate(lines, 1):
                line = line.rstrip("\r\n")
                if not line or line.startswith("#"):
                    continue
                a, tab, b = line.partition("\t")
                if not tab or not a or not b or "\t" in b:
                    raise ValueError(f"{path}:{number}: expected 'source URL<TAB>target URL'")
                src.append(ids.setdefault(a, len(ids)))
                dst.append(ids.setdefault(b, len(ids)))
        return cls.from_edges(list(ids), np.frombuffer(src, dtype=np.int32), np.frombuffer(dst, dtype=np.int32))

    @classmethod
    def from_edges(cls, urls: list[str], src: np.ndarray, dst: np.ndarray) -> LinkGraph:
        """Build from parallel edge arrays; links of one page keep their relative order."""
        order = np.argsort(src, kind="stable")
        counts = np.bincount(src, minlength=len(urls))
        offsets = np.zeros(len(urls) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(urls, offsets, np.ascontiguousarray(dst[order], dtype=np.int32))

    @property
    def num_pages(self) -> int:
        return len(self.urls)

    def find(self, key: str) -> int | None:
        """Page id of a URL key (see :func:`url_key`), or None if it is not in the graph."""
        return self._ids.get(key)

    def url(self, page: int) -> str:
        return self.urls[page]

    def out_links(self, page: int) -> np.ndarray:
        return self.targets[self.offsets[page] : self.offsets[page + 1]]

    def is_topical(self, page: int) -> bool:
        return False


def write_links(graph, path: str | Path) -> None:
    """Write any graph (loaded or generated) as ``links.tsv(.gz)``, readable by :meth:`LinkGraph.load`."""
    with open_text(path, "wt") as out:
        for page in range(graph.num_pages):
            source = graph.url(page)
            targets = graph.out_links(page).tolist()
            if targets:
                out.write("".join(f"{source}\t{graph.url(t)}\n" for t in targets))
