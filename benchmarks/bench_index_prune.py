"""SimhashIndex.prune() (the crawl's daily prune) at N fingerprints on the embedded Redis.

Times a prune that deletes the expired share, then one that finds nothing. Figures and commands:
docs/benchmarks.md#bench_index_prunepy.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from bench_index import bench_server, print_rows, stop_server

from newscrawl.index import SimhashIndex

DAY = 86400.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="fingerprints stored")
    parser.add_argument("--expired", type=float, default=0.1, help="share stored 400 days ago")
    parser.add_argument("--retention-days", type=int, default=365)
    args = parser.parse_args(argv)

    client = bench_server(Path(tempfile.mkdtemp(prefix="bench-prune-")))
    rng = random.Random(1)
    n_old = int(args.n * args.expired)
    now = time.time()
    for count, days_ago in ((n_old, 400.0), (args.n - n_old, 10.0)):
        loader = SimhashIndex(client, prefix="bench", clock=(now - days_ago * DAY).__float__)
        loader.add_many(
            (rng.getrandbits(64), f"https://news.example.com/{i}/{rng.getrandbits(40)}.html")
            for i in range(count)
        )
    idx = SimhashIndex(client, prefix="bench", retention_days=args.retention_days)
    t0 = time.perf_counter()
    first = idx.prune()
    first_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = idx.prune()
    second_s = time.perf_counter() - t0
    rows = [
        ("fingerprints stored", f"{args.n:,} ({n_old:,} older than {args.retention_days} days)"),
        ("prune(), first (deletes the expired)", f"{first_s:.1f} s, {first:,} deleted"),
        ("prune(), again (nothing expired)", f"{second_s:.1f} s, {second:,} deleted"),
        ("fingerprints left (meta count)", f"{idx.count():,}"),
    ]
    print_rows(rows)
    stop_server(client)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
