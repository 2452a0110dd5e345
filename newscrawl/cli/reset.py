"""``newscrawl reset``: forget a spider's crawl state (and with ``--index`` the index)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from newscrawl.cli._common import CliError, open_redis
from newscrawl.exitcodes import ExitCode
from newscrawl.scheduling.liveness import gone_from_this_host


def _count_keys(client: Any, pattern: str) -> list[str]:
    return [k.decode() if isinstance(k, bytes) else k for k in client.scan_iter(pattern, 1000)]


def _confirm(summary: str) -> bool:
    """Show what would be done (also without a terminal, before refusing), then ask."""
    print(summary, file=sys.stderr)
    try:
        interactive = bool(sys.stdin and sys.stdin.isatty())
    except (OSError, ValueError):
        interactive = False
    if not interactive:
        raise CliError("not confirmed: standard input is not a terminal (pass --yes)")
    print("Continue? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def live_workers(client: Any, prefix: str, spider: str) -> list[dict[str, Any]]:
    """The registered workers of ``spider`` whose heartbeat is alive (their host, pid, run)."""
    from newscrawl import keys

    alive = []
    registry = keys.CRAWL_WORKERS.format(prefix=prefix, spider=spider)
    for worker, info in client.hgetall(registry).items():
        name = worker.decode() if isinstance(worker, bytes) else str(worker)
        if client.exists(keys.CRAWL_WORKER.format(prefix=prefix, spider=spider, worker=name)):
            try:
                data = dict(json.loads(info))
            except ValueError:
                data = {"host": name}
            if not gone_from_this_host(data):  # killed here: dead, its heartbeat notwithstanding
                alive.append(data)
    return alive


def cmd_reset(args: argparse.Namespace) -> int:
    """Delete a spider's crawl state (and with ``--index`` the near-duplicate index and the
    duplicate records); the stored article files stay."""
    from newscrawl import keys

    spider = args.spider
    if not spider or ":" in spider or "*" in spider or spider in ("simhash", "duplicates"):
        raise CliError(f"not a spider name: {spider!r}")
    prefix = args.prefix
    crawl_pattern = f"{prefix}:{spider}:*"
    with open_redis(args) as client:
        inflight_key = keys.CRAWL_INFLIGHT.format(prefix=prefix, spider=spider)
        in_flight = client.zcard(inflight_key)
        alive = live_workers(client, prefix, spider)
        if alive and not args.force:
            who = ", ".join(f"{w.get('host')}:{w.get('pid')}" for w in alive)
            raise CliError(
                f"a run of spider {spider!r} is live: {len(alive)} worker(s) alive ({who});"
                f" {in_flight} request(s) in flight: stop its workers first, or pass --force if"
                " they are gone")
        crawl_keys = _count_keys(client, crawl_pattern)
        index_keys: list[str] = []
        if args.index:
            index_keys = _count_keys(client, f"{prefix}:simhash:*")
            index_keys += [
                k
                for k in (
                    keys.DUPLICATES.format(prefix=prefix),
                    keys.DUPLICATES_LOG.format(prefix=prefix),
                )
                if client.exists(k)
            ]
        queued = client.zcard(keys.CRAWL_QUEUE.format(prefix=prefix, spider=spider))
        seen_shards = sum(1 for k in crawl_keys if k.startswith(f"{prefix}:{spider}:seen:"))
        what = (
            f"crawl state of spider {spider!r}: {len(crawl_keys)} key(s) {crawl_pattern} "
            f"({queued} queued, {in_flight} in flight, {seen_shards} shard(s) of done URLs)"
        )
        if args.index:
            what += (
                f"; near-duplicate index and duplicate records: {len(index_keys)} key(s) "
                f"{prefix}:simhash:*, {prefix}:duplicates*"
            )
        if not crawl_keys and not index_keys:
            print(f"nothing to reset: no keys {crawl_pattern}" + (
                f", {prefix}:simhash:*, {prefix}:duplicates*" if args.index else ""))
            return ExitCode.OK
        after = (
            "the next crawl rebuilds the index from the article files and fetches every "
            "article page again; articles in those files are not stored again (move them away "
            "first to store every article again)"
            if args.index
            else "the next crawl fetches every article page again; articles in the index and "
            "the article store are not stored again"
        )
        if not args.yes and not _confirm(f"would delete the {what}\n{after}."):
            print("nothing deleted", file=sys.stderr)
            return ExitCode.ERROR
        deleted = 0
        todo = crawl_keys + index_keys
        for i in range(0, len(todo), 1000):
            deleted += int(client.delete(*todo[i : i + 1000]))
    print(f"deleted {deleted} key(s): {what}")
    print(after)
    return ExitCode.OK


def add_reset(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "reset",
        parents=[common],
        help="forget what the crawl knows about a spider (queue, done URLs, failures...)",
        description="Delete the crawl state of a spider: every key {prefix}:{spider}:* (queue, "
        "in-flight leases, done URLs, pending and failure records, dead letters, run marker, "
        "list pages seen). The next crawl fetches every article page again; articles already "
        "in the index and the article store are not stored again. With --index, also the "
        "near-duplicate index and the recorded duplicates ({prefix}:simhash:*, "
        "{prefix}:duplicates*): the next crawl rebuilds the index from the stored article "
        "files (move them away first to store every article again). Stored article files "
        "are never touched.",
    )
    p.add_argument("--spider", default="portal", help="spider name (default: portal)")
    p.add_argument(
        "--index",
        action="store_true",
        help="also the near-duplicate index and the duplicate records (all spiders)",
    )
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument(
        "--force", action="store_true", help="reset even while a run of the spider is marked active"
    )
    p.set_defaults(func=cmd_reset)


