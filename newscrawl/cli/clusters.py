"""``newscrawl clusters``: each original with the reprints dropped against it, newest first, read
from the duplicate records (:mod:`newscrawl.index.duplicates`). docs/cli.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from newscrawl.cli._common import open_redis, positive_int, print_json
from newscrawl.exitcodes import ExitCode
from newscrawl.formats import SECONDS_PER_DAY
from newscrawl.index.duplicates import DuplicateLog, DuplicateRecord

#: records read per round trip
PAGE = 1000


@dataclass
class Cluster:
    """One story: the copy stored, the near-duplicates dropped against it (newest first) and,
    when the original was met after its copy (a late original), that original."""

    original_url: str
    duplicates: list[DuplicateRecord] = field(default_factory=list)
    original_title: str | None = None
    original_published: str | None = None
    #: the copy that is stored (``original_url`` too, unless a late original is known)
    stored_url: str = ""
    #: the record of the story's original, dropped because its copy was stored first
    late: DuplicateRecord | None = None

    def __post_init__(self) -> None:
        self.stored_url = self.stored_url or self.original_url

    @property
    def latest(self) -> float:
        times = [d.seen_at for d in self.duplicates[:1]]
        if self.late is not None:
            times.append(self.late.seen_at)
        return max(times, default=0.0)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "original_url": self.original_url,
            "original_title": self.original_title,
            "original_published": self.original_published,
            "original_stored": self.late is None,
            "stored_url": self.stored_url,
            "duplicates": [
                {
                    "url": d.url,
                    "distance": d.distance,
                    "seen_at": d.seen_at_iso,
                    "site": d.extra.get("site"),
                    "published": d.extra.get("published"),
                }
                for d in self.duplicates
            ],
        }


def iter_records(log: DuplicateLog, page: int = PAGE) -> Iterator[DuplicateRecord]:
    """Every recorded near-duplicate, newest first, ``page`` records a round trip.

    Records added while reading (newer than the newest one at the start) are left out, so none
    is read twice; an unreadable record is skipped (as ``DuplicateLog.list`` does)."""
    client = log.client
    top = client.zrevrange(log.log_key, 0, 0, withscores=True)
    if not top:
        return
    newest = top[0][1]
    offset = 0
    seen: set[Any] = set()
    while True:
        urls: list[Any] = list(
            client.zrevrangebyscore(log.log_key, newest, "-inf", start=offset, num=page)
        )
        if not urls:
            return
        offset += len(urls)
        raws = client.hmget(log.hash_key, urls)
        for url, raw in zip(urls, raws, strict=True):
            if raw is None or url in seen:
                continue
            seen.add(url)
            try:
                yield DuplicateRecord.from_stored(raw)
            except (ValueError, KeyError, TypeError):
                continue


def _roots(records: list[DuplicateRecord]) -> dict[str, str]:
    """Each record's original, followed up the records: a copy stored before an original
    published earlier than it is recorded as that original's near-duplicate, and a reprint
    dropped against that copy belongs to the same original."""
    parent = {r.url: r.original_url for r in records}
    roots: dict[str, str] = {}
    for record in records:
        url, seen = record.original_url, {record.url}
        while url in parent and url not in seen:
            seen.add(url)
            url = parent[url]
        roots[record.url] = url
    return roots


def group(records: Iterator[DuplicateRecord] | list[DuplicateRecord]) -> list[Cluster]:
    """Records grouped by original, newest cluster first, each cluster's duplicates newest first."""
    records = list(records)
    roots = _roots(records)
    clusters: dict[str, Cluster] = {}
    for record in records:
        root = roots[record.url]
        cluster = clusters.get(root)
        if cluster is None:
            cluster = clusters[root] = Cluster(root)
        cluster.duplicates.append(record)
        if root != record.original_url:
            continue
        if cluster.original_title is None:
            title = record.extra.get("original_title")
            if isinstance(title, str) and title:
                cluster.original_title = title
        if cluster.original_published is None:
            published = record.extra.get("original_published")
            if isinstance(published, str) and published:
                cluster.original_published = published
    out = list(clusters.values())
    for cluster in out:
        cluster.duplicates.sort(key=lambda d: (d.seen_at, d.url), reverse=True)
        _name_late_original(cluster)
    out.sort(key=lambda c: (c.latest, c.original_url), reverse=True)
    return out


def _name_late_original(cluster: Cluster) -> None:
    """A cluster whose stored copy was published after a dropped copy of it: that copy (the
    earliest published of them) is the story's original, named as such; the stored copy stays
    ``stored_url``."""
    late = [d for d in cluster.duplicates
            if d.late_original and d.original_url == cluster.stored_url]
    if not late:
        return
    first = min(late, key=lambda d: (str(d.extra.get("published") or ""), d.seen_at, d.url))
    cluster.late = first
    cluster.duplicates.remove(first)
    cluster.original_url = first.url
    title = first.extra.get("title")
    cluster.original_title = title if isinstance(title, str) and title else None
    published = first.extra.get("published")
    cluster.original_published = published if isinstance(published, str) else None


def fill_titles(clusters: list[Cluster], store_dir: Path) -> None:
    """Titles of the originals that have none, from the stored articles."""
    from newscrawl.storage import day_of, find_articles

    missing = [c for c in clusters if c.original_title is None]
    if not missing or not store_dir.is_dir():
        return
    # the original was stored before its first duplicate was seen (one day of slack for clocks)
    until = day_of(max(c.latest for c in missing) + SECONDS_PER_DAY)
    found = find_articles(store_dir, (c.original_url for c in missing), until_day=until)
    for cluster in missing:
        title = (found.get(cluster.original_url) or {}).get("title")
        if isinstance(title, str) and title:
            cluster.original_title = title


def cmd_clusters(args: argparse.Namespace) -> int:
    from newscrawl.connection import resolve_data_dir

    with open_redis(args) as client:
        log = DuplicateLog(client, prefix=args.prefix)
        clusters = group(iter_records(log))
    total_clusters = len(clusters)
    # every record: a late original's too (named as its cluster's original, not a duplicate)
    total_records = sum(len(c.duplicates) + (c.late is not None) for c in clusters)
    total_late = sum(c.late is not None for c in clusters)
    if args.limit is not None:
        clusters = clusters[: args.limit]
    store_dir = (
        Path(args.store_dir) if args.store_dir else resolve_data_dir(args.data_dir) / "articles"
    )
    fill_titles(clusters, store_dir.expanduser())
    if args.json:
        for cluster in clusters:
            print_json(cluster.to_json_dict())
        return ExitCode.OK
    if not clusters:
        print("no near-duplicates recorded")
        return ExitCode.OK
    for n, cluster in enumerate(clusters):
        if n:
            print()
        count = len(cluster.duplicates)
        reprints = f"{count} {'other ' if cluster.late else ''}reprint{'s' if count != 1 else ''}"
        print(f"{cluster.original_url}  ("
              + ("the original, itself dropped: met after its copy; " if cluster.late else "")
              + f"{reprints} dropped, latest {_when(cluster.latest)})")
        print(f"    {cluster.original_title or '(title unknown)'}")
        if cluster.late is not None:
            print(f"    the original, published first, met after its copy: not stored; the copy"
                  f" stored is {cluster.stored_url}")
        for d in cluster.duplicates:
            site = d.extra.get("site")
            print(
                f"  d={d.distance:<2} {_when(d.seen_at)}  {d.url}" + (f"  [{site}]" if site else "")
            )
    records = "near-duplicate" if total_records == 1 else "near-duplicates"
    originals = "original" if total_clusters == 1 else "originals"
    late = (f", {total_late} of them " + ("an original met after its copy" if total_late == 1
                                            else "originals met after their copy")
            if total_late else "")
    print(f"\n{len(clusters)} of {total_clusters} {originals} shown ({total_records} {records}"
          f" recorded{late}), newest first")
    return ExitCode.OK


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + "Z"


def add_clusters(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``clusters`` parser to ``sub`` (the subparsers; ``common``: shared options)."""
    p = sub.add_parser(
        "clusters",
        parents=[common],
        help="each original with the near-duplicates dropped against it, newest first",
        description="Group the recorded near-duplicates by original, newest first (a cluster is "
        "as new as its newest duplicate). The original's title is looked up in the stored "
        "articles. When the original was met after a copy of it was stored, the copy stays the "
        "only one stored and the original is named as such.",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per original")
    p.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        metavar="N",
        help="show the newest N originals (N >= 1; default: all)",
    )
    p.add_argument(
        "--store-dir",
        default=None,
        help="the stored articles, for the originals' titles (default: <data dir>/articles)",
    )
    p.set_defaults(func=cmd_clusters)
