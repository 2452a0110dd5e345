"""``newscrawl duplicates``, ``stats`` and ``prune``: the near-duplicate index and its records."""

from __future__ import annotations

import argparse
from typing import Any

from newscrawl.cli._common import open_redis, positive_int, print_json
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import fingerprint_hex, plural


def cmd_duplicates(args: argparse.Namespace) -> int:
    from newscrawl.index import DuplicateLog

    with open_redis(args) as client:
        log = DuplicateLog(client, prefix=args.prefix)
        records = log.list(limit=args.limit)
        total = log.count()
    if args.json:
        for record in records:
            print_json(record.to_json_dict())
        return ExitCode.OK
    if not records:
        print("no near-duplicates recorded")
        return ExitCode.OK
    for record in records:
        mark = "  (published first: the original, met after its copy)" \
            if record.late_original else ""
        print(
            f"{record.seen_at_iso}  d={record.distance}  {record.url}{mark}\n"
            f"    stored copy: {record.original_url}  "
            f"({fingerprint_hex(record.simhash)} ~ {fingerprint_hex(record.original_simhash)})"
        )
    late = sum(r.late_original for r in records)
    print(f"{len(records)} of {total} recorded near-duplicates shown (newest first), each dropped"
          " (not stored)" + (f"; {late} of them {'an original' if late == 1 else 'originals'}"
                             f" met after {'its' if late == 1 else 'their'} copy" if late else ""))
    return ExitCode.OK


def cmd_stats(args: argparse.Namespace) -> int:
    from newscrawl.index import index_stats

    with open_redis(args) as client:
        stats = index_stats(client, prefix=args.prefix)
    if args.json:
        print_json(stats)
        return ExitCode.OK
    size = stats["bucket_size"]
    lines = [
        f"prefix:                  {stats['prefix']}",
        f"fingerprint version:     {stats['version'] or '(none yet)'}",
        f"fingerprints stored:     {stats['fingerprints']}",
        f"articles indexed:        {stats['articles']}"
        + (
            " (articles whose texts the sketch tells apart may share a fingerprint)"
            if stats["articles"] != stats["fingerprints"]
            else ""
        ),
        f"duplicates recorded:     {stats['duplicates']}",
        f"buckets:                 {stats['buckets']} "
        f"(per block {', '.join(f'{b}: {n}' for b, n in stats['buckets_per_block'].items())})",
        f"bucket size:             min {size['min']}, median {size['median']}, "
        f"p99 {size['p99']}, max {size['max']}",
        "bucket size histogram:   "
        + (", ".join(f"{k}: {v}" for k, v in size["histogram"].items()) or "-"),
        f"buckets not compact:     {stats['buckets_hashtable_encoded']} (hashtable encoding)",
        f"Redis used_memory:       {stats['used_memory_human']} ({stats['used_memory']} bytes)",
    ]
    print("\n".join(lines))
    return ExitCode.OK


def cmd_prune(args: argparse.Namespace) -> int:
    from newscrawl.index import DuplicateLog, SimhashIndex

    with open_redis(args) as client, SimhashIndex(
        client, prefix=args.prefix, tune_server=False
    ) as index:
        deleted = index.prune(args.days)
        left = index.count()
        print(f"deleted {plural(deleted, 'fingerprint')} older than {plural(args.days, 'day')}; "
              f"{left} left")
        if args.duplicates_days is not None:
            log = DuplicateLog(client, prefix=args.prefix)
            gone = log.prune(args.duplicates_days)
            print(f"deleted {plural(gone, 'near-duplicate record')} older than "
                  f"{plural(args.duplicates_days, 'day')}; {log.count()} left")
    return ExitCode.OK


def add_duplicates(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "duplicates", parents=[common], help="recorded near-duplicates, newest first"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        metavar="N",
        help="show the newest N (N >= 1; default: all)",
    )
    p.set_defaults(func=cmd_duplicates)


def add_stats(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("stats", parents=[common], help="index size, buckets, Redis memory")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.set_defaults(func=cmd_stats)


def add_prune(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "prune", parents=[common], help="delete fingerprints first stored more than N days ago"
    )
    p.add_argument(
        "--days", type=positive_int, required=True, metavar="N", help="retention in days (N >= 1)"
    )
    p.add_argument(
        "--duplicates-days",
        type=positive_int,
        default=None,
        metavar="M",
        help="also delete the records of dropped near-duplicates logged more than M days ago"
        " (M >= 1)",
    )
    p.set_defaults(func=cmd_prune)


