"""Time and Redis server CPU of one dequeue with the cluster-wide politeness grant (pop.lua).

On its own redis-server, no persistence. Cases and figures: docs/benchmarks.md#bench_politepy.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (tests/ and this tree on sys.path)
import redis
from redisserver import RedisServer
from scrapy import Request, Spider
from scrapy.utils.httpobj import urlparse_cached

from newscrawl import defaults
from newscrawl.redis import RetryPolicy
from newscrawl.scheduling import queue as q


class BenchSpider(Spider):
    name = "bench"


THROTTLE = q.Throttle(target_concurrency=1.0, start_ms=1000.0, max_ms=60000.0, ttl_ms=180000)


def make_queue(client: redis.Redis, window: int, hosts: dict[str, int],
               throttle: q.Throttle | None = None) -> q.LeasedPriorityQueue:
    def host_slot(request: Request) -> q.HostSlot:
        host = urlparse_cached(request).hostname or ""
        return q.HostSlot(f"b:bench:slots:{host}", hosts.get(host, 2), 0)

    return q.LeasedPriorityQueue(
        client, BenchSpider(), "b:bench:requests", inflight_key="b:bench:inflight",
        seq_key="b:bench:seq", deadletter_key="b:bench:dead", pending_key="b:bench:pending",
        failures_key="b:bench:failures", retry_key="b:bench:retry", lease_seconds=600,
        retry=RetryPolicy(10), deadletter_max=defaults.DEADLETTER_MAX, host_slot=host_slot,
        polite_window=window, throttle=throttle)


def push(queue: q.LeasedPriorityQueue, urls: list[str]) -> None:
    spec = q.DedupeSpec(q.MODE_FORCE, bytes(8), "b:none", b"", "b:none", 0, 1)
    for url in urls:
        payload = queue.encode(Request(url, meta={"newscrawl_site": "bench"}), kind="article",
                               fp=bytes(8), pending=False, origins=())
        queue.push_entry(payload, 0, spec)


def server_cpu(client: redis.Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def measure(client: redis.Redis, queue: q.LeasedPriorityQueue, pops: int,
            call: Callable[[], object] | None = None) -> tuple[float, float]:
    """(µs per call, server CPU µs per call) of ``pops`` dequeue calls (or ``call``s)."""
    call = call or queue.pop_raw
    cpu0, t0 = server_cpu(client), time.perf_counter()
    for _ in range(pops):
        call()
    elapsed, cpu = time.perf_counter() - t0, server_cpu(client) - cpu0
    return elapsed / pops * 1e6, cpu / pops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pops", type=int, default=2000)
    parser.add_argument("--window", type=int, default=defaults.POLITE_WINDOW)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp), persist=False) as srv:
        client = srv.client()
        version = client.info("server")["redis_version"]
        # one entry per host, every host free (concurrency 2 each)
        urls = [f"http://h{i}.test/a/{i}.html" for i in range(args.pops)]
        for name, window in (("window 0 (no host limits)", 0),
                             ("grant, free host first", args.window)):
            client.flushall()
            queue = make_queue(client, window, {})
            push(queue, urls)
            rows.append((name, *measure(client, queue, args.pops)))
        # the same with AutoThrottle shared: every host has its delay key
        client.flushall()
        queue = make_queue(client, args.window, {}, THROTTLE)
        push(queue, urls)
        for i in range(args.pops):
            client.set(f"b:bench:slots:h{i}.test:throttle", "1000.000", px=600_000)
        rows.append(("grant, free host first, AutoThrottle shared",
                     *measure(client, queue, args.pops)))
        response = Request("http://h0.test/a/0.html", meta={"newscrawl_site": "bench"})
        slot = queue.host_slot(response) if queue.host_slot is not None else None
        assert slot is not None
        rows.append(("AutoThrottle move per response (not a dequeue)",
                     *measure(client, queue, args.pops,
                              lambda: queue.adapt_delay(slot, 0.5, True))))
        # busy: the window holds entries of 10 hosts at their limit (1 each, already taken)
        client.flushall()
        busy = {f"busy{i}.test": 1 for i in range(10)}
        queue = make_queue(client, args.window, busy)
        push(queue, [f"http://busy{i % 10}.test/a/{i}.html" for i in range(args.window + 10)])
        for _ in range(10):
            assert queue.pop_raw() is not None  # one per host: every host is now at its limit
        assert queue.pop_raw() is None
        rows.append(("grant, window full of busy hosts (nothing granted)",
                     *measure(client, queue, args.pops)))
    print(f"## Dequeue cost ({args.pops:,} calls, window {args.window}, Redis {version})\n")
    print("| dequeue | µs / call | server CPU µs / call |")
    print("|---|---:|---:|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall:.0f} | {cpu:.0f} |")


if __name__ == "__main__":
    main()
