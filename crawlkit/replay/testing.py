"""Pytest helpers: start replay servers in tests and have them stopped afterwards.

Use the fixture from any test module or conftest::

    from crawlkit.replay.testing import replay_factory  # noqa: F401  (makes the fixture visible)

    def test_crawl(replay_factory):
        server = replay_factory(["gen:200,seed=1"], faults=[{"glob": "*/p7.html", "kind": "status", "status": 503}])
        requests.get("http://s0.gen.test/", proxies=server.proxies)

or, without the fixture, ``with replay_server(tmp_path, ["gen:200"]) as server: ...``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from .process import ReplayServer

__all__ = ["ReplayServer", "replay_factory", "replay_server"]


def replay_server(tmp_path: str | os.PathLike, sources: Sequence[str | os.PathLike], **options) -> ReplayServer:
    """A started :class:`ReplayServer` working in ``tmp_path``; stop it (or use ``with``)."""
    return ReplayServer(sources, workdir=tmp_path, **options).start()


@pytest.fixture
def replay_factory(tmp_path: Path) -> Iterator[Callable[..., ReplayServer]]:
    """A function ``(sources, **ReplayServer options) -> started server``; all are stopped at teardown."""
    servers: list[ReplayServer] = []

    def start(sources: Sequence[str | os.PathLike], **options) -> ReplayServer:
        server = replay_server(tmp_path / f"replay-{len(servers)}", sources, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
