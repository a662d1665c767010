"""The replay web: a local web server the crawler fetches through, for tests, demos and benchmarks.

It serves generated webs, link graphs and WARC archives as an HTTP forward proxy
for any host, with robots.txt rules, faults, traps and pages that change under a
caller-controlled clock, and logs every request. See docs/replay.md.
"""

from .accesslog import read_access_log
from .changes import ChangeModel
from .generated import GeneratedWeb
from .graph import LinkGraph
from .process import ReplayServer

__all__ = ["ChangeModel", "GeneratedWeb", "LinkGraph", "ReplayServer", "read_access_log"]
