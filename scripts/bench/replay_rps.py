"""Requests per second through the replay web's proxy, with concurrent keep-alive clients.

Starts the replay server (a subprocess) on a generated web, then runs client
processes, each with many keep-alive connections on one asyncio loop, sending
absolute-form GETs (as a crawler using the server as its HTTP proxy does) for
random pages, for a bounded time. Prints requests/s, status counts, and the
server's CPU time per request (which, unlike requests/s, does not depend on what
else the machine is running).

    .venv/bin/python scripts/bench/replay_rps.py --pages 100000 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import time
from collections import Counter

import psutil

from crawlkit.replay import GeneratedWeb, ReplayServer


async def _client(port: int, urls: list[str], connections: int, deadline: float, seed: int) -> Counter:
    statuses: Counter = Counter()
    rng = random.Random(seed)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.monotonic() < deadline:
            url = rng.choice(urls)
            writer.write(f"GET {url} HTTP/1.1\r\nHost: {url.split('/')[2]}\r\nUser-Agent: bench\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            statuses[status] += 1
        writer.close()

    await asyncio.gather(*(connection() for _ in range(connections)))
    return statuses


def _client_process(port: int, urls: list[str], connections: int, deadline: float, seed: int, results) -> None:
    results.put(asyncio.run(_client(port, urls, connections, deadline, seed)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000, help="size of the generated web")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the clients run")
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections per client process")
    args = parser.parse_args()

    spec = f"gen:{args.pages},seed=1"
    web = GeneratedWeb(spec)
    rng = random.Random(0)
    urls = [web.url(rng.randrange(web.num_pages)) for _ in range(20_000)]
    with ReplayServer([spec], changes="1:never") as server:
        server_process = psutil.Process(server.pid)
        cpu_before = sum(server_process.cpu_times()[:2])
        results = multiprocessing.Queue()
        start = time.monotonic()
        deadline = start + args.seconds
        workers = [multiprocessing.Process(target=_client_process,
                                           args=(server.port, urls, args.connections, deadline, i, results))
                   for i in range(args.processes)]
        for worker in workers:
            worker.start()
        statuses = sum((results.get() for _ in workers), Counter())
        elapsed = time.monotonic() - start
        server_cpu = sum(server_process.cpu_times()[:2]) - cpu_before
        for worker in workers:
            worker.join()
    total = sum(statuses.values())
    print(f"{total} requests in {elapsed:.1f} s through the proxy ({args.processes} client process(es) x "
          f"{args.connections} keep-alive connections, {args.pages} pages): {total / elapsed:,.0f} requests/s")
    print(f"statuses: {dict(statuses)}; server CPU {server_cpu / total * 1e6:.0f} us per request "
          f"({total / server_cpu:,.0f} requests per CPU-second)")


if __name__ == "__main__":
    main()
