"""A crawl takes the newest article URLs of its feeds within the per-document and per-run caps,
counts what it leaves out, and stops within seconds of SIGTERM while it reads a large feed."""

from __future__ import annotations

import gzip
import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from crawlrun import run_crawl, start_crawl, wait_for
from mockportal import MockPortal, Page

SETTINGS = ("AUTOTHROTTLE_ENABLED=False", "ROBOTSTXT_OBEY=False")


def feed(portal: MockPortal, prefix: str, n: int, seed: int) -> list[tuple[str, datetime]]:
    """Serve ``/<prefix>.xml``: ``n`` items dated in random order; returns (path, date)."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 25, tzinfo=UTC)
    items = [(f"/{prefix}/{i}.html", start - timedelta(hours=h))
             for i, h in enumerate(rng.sample(range(10_000), n))]
    body = "".join(f"<item><title>{path}</title><link>{portal.url(path)}</link>"
                   f"<pubDate>{format_datetime(when)}</pubDate></item>" for path, when in items)
    portal.set(f"/{prefix}.xml", Page(
        ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>f</title>'
         f"<link>{portal.base}/</link>{body}</channel></rss>").encode(), "application/rss+xml"))
    return items


def newest(items: list[tuple[str, datetime]], n: int) -> set[str]:
    return {path for path, _ in sorted(items, key=lambda item: item[1], reverse=True)[:n]}


def test_the_newest_entries_within_the_caps(tmp_path: Path, portal: MockPortal) -> None:
    one = feed(portal, "one", 30, seed=1)
    two = feed(portal, "two", 12, seed=2)
    three = feed(portal, "three", 12, seed=3)
    sites = tmp_path / "sites.toml"
    sites.write_text(
        f'[[sites]]\nname = "one"\nfeed_urls = ["{portal.url("/one.xml")}"]\n'
        f'[[sites]]\nname = "two"\nfeed_urls = ["{portal.url("/two.xml")}",'
        f' "{portal.url("/three.xml")}"]\n', encoding="utf-8")
    result = run_crawl(tmp_path, sites, *SETTINGS, "NEWSCRAWL_SITEMAP_MAX_ENTRIES=10",
                       "NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES=15")
    assert result.returncode == 0, result.log[-3000:]
    hits = portal.hit_counts()
    fetched = {path for path in hits if path.endswith(".html")}
    # site "one": the 10 newest of its 30
    assert {p for p in fetched if p.startswith("/one/")} == newest(one, 10)
    # site "two": 15 in all, the 10 newest of the feed read first, the 5 newest of the other
    two_got = {p for p in fetched if p.startswith("/two/")}
    three_got = {p for p in fetched if p.startswith("/three/")}
    assert (two_got, three_got) in [(newest(two, 10), newest(three, 5)),
                                    (newest(two, 5), newest(three, 10))]
    assert result.stats.get("newscrawl/feeds/entries_capped") == 20 + 2
    assert result.stats.get("newscrawl/feeds/run_capped") == 7
    assert "taking the 10 newest, 20 are left for the next run (NEWSCRAWL_SITEMAP_MAX_ENTRIES)" \
        in result.log


def test_sigterm_while_a_large_feed_is_read_stops_within_seconds(
        tmp_path: Path, portal: MockPortal) -> None:
    start = datetime(2026, 11, 25, tzinfo=UTC)
    # a bare "&" in the links, as portals write them: feedparser reads it (about 1 ms an item)
    body = "".join(f"<item><title>t{i}</title><link>{portal.base}/big/{i}.html?a=1&b=2</link>"
                   f"<pubDate>{format_datetime(start - timedelta(seconds=i))}</pubDate></item>"
                   for i in range(150_000))
    portal.set("/big.xml.gz", Page(gzip.compress(
        ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>big'
         f"</title><link>{portal.base}/</link>{body}</channel></rss>").encode()),
        "application/x-gzip"))
    sites = tmp_path / "sites.toml"
    sites.write_text(f'[[sites]]\nname = "big"\nfeed_urls = ["{portal.url("/big.xml.gz")}"]\n',
                     encoding="utf-8")
    worker = start_crawl(tmp_path, sites, *SETTINGS, log_path=tmp_path / "crawl.log")
    try:
        wait_for(lambda: portal.hit_counts().get("/big.xml.gz", 0) > 0, timeout=60,
                 what="the feed to be fetched")
        time.sleep(1)  # the feed is being parsed (several seconds of CPU for 150,000 items)
        worker.terminate()
        # reading it all takes minutes of CPU (about 1 ms an item): a stop within a minute,
        # even on a loaded machine, is the stop between two batches
        result = worker.wait(timeout=60)
    finally:
        worker.kill()
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats.get("finish_reason") == "shutdown"
    assert result.stats.get("newscrawl/feeds/stopped") == 1
    assert not any(path.startswith("/big/") for path in portal.hit_counts())
