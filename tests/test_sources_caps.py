"""Bounds on reading one sitemap or feed (newscrawl.sources): the newest ``max_entries`` article
URLs are kept and the rest counted, a large feed is parsed in batches (the same URLs; the memory
is measured by benchmarks/bench_sources_large.py), and a parse asked to stop ends with
``stopped``."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from xml.sax.saxutils import escape

import feedparser
import pytest

from newscrawl.sources import FEED_BATCH_ENTRIES, SourceError, parse_feed, parse_sitemap

BASE = "http://news.example.com"
SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def dated(n: int, seed: int = 7, undated: int = 0) -> list[tuple[str, datetime | None]]:
    """``n`` article URLs with distinct dates in random order, then ``undated`` without one."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    days = rng.sample(range(20_000), n)
    entries: list[tuple[str, datetime | None]] = [
        (f"{BASE}/a/{i}.html", start - timedelta(minutes=d)) for i, d in enumerate(days)]
    entries += [(f"{BASE}/u/{i}.html", None) for i in range(undated)]
    rng.shuffle(entries)
    return entries


def urlset(entries: list[tuple[str, datetime | None]]) -> bytes:
    body = "".join(f"<url><loc>{escape(u)}</loc>"
                   + (f"<lastmod>{d.isoformat()}</lastmod>" if d else "") + "</url>"
                   for u, d in entries)
    return f'<?xml version="1.0"?>\n<urlset xmlns="{SM_NS}">{body}</urlset>'.encode()


def rss(entries: list[tuple[str, datetime | None]]) -> bytes:
    body = "".join(f"<item><title>新闻 {i}</title><link>{escape(u)}</link>"
                   + (f"<pubDate>{format_datetime(d)}</pubDate>" if d else "")
                   + f"<description>正文摘要 {i}</description></item>"
                   for i, (u, d) in enumerate(entries))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>甲网'
            f"</title><link>{BASE}/</link>{body}</channel></rss>").encode()


def atom(entries: list[tuple[str, datetime | None]]) -> bytes:
    body = "".join(f'<entry><title>新闻 {i}</title><id>urn:n:{i}</id><link href="{escape(u)}"/>'
                   + (f"<published>{d.isoformat()}</published>" if d else "") + "</entry>"
                   for i, (u, d) in enumerate(entries))
    return ('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
            f"<title>甲网</title><id>urn:feed</id>{body}</feed>").encode()


def newest(entries: list[tuple[str, datetime | None]], limit: int) -> list[str]:
    """The ``limit`` newest (dated before undated, earlier in the document first), in document
    order: what the parsers must keep."""
    order = sorted(range(len(entries)), key=lambda i: (entries[i][1] is None,
                                                       -(entries[i][1] or datetime.min.replace(
                                                           tzinfo=UTC)).timestamp(), i))
    return [entries[i][0] for i in sorted(order[:limit])]


@pytest.mark.parametrize("build,parse", [(urlset, parse_sitemap), (rss, parse_feed),
                                         (atom, parse_feed), (rss, parse_sitemap)])
def test_the_newest_entries_are_kept_and_the_rest_counted(build, parse) -> None:  # type: ignore[no-untyped-def]
    entries = dated(FEED_BATCH_ENTRIES + 100, undated=30)  # a feed in two batches
    limit = FEED_BATCH_ENTRIES + 110
    doc = parse(build(entries), f"{BASE}/source.xml", max_entries=limit)
    assert doc.urls == newest(entries, limit)  # every dated one, then the first 10 undated
    assert doc.capped == len(entries) - limit
    doc = parse(build(entries), f"{BASE}/source.xml", max_entries=50)
    assert doc.urls == newest(entries, 50)
    assert doc.capped == len(entries) - 50
    doc = parse(build(entries), f"{BASE}/source.xml")
    assert doc.urls == [u for u, _ in entries] and doc.capped == 0


def test_a_large_feed_is_read_in_batches_with_the_same_links() -> None:
    entries = dated(FEED_BATCH_ENTRIES * 2 + 7)
    body = rss(entries)
    whole = [e.link for e in feedparser.parse(body).entries]
    doc = parse_feed(body, f"{BASE}/feed.xml")
    assert doc.urls == whole == [u for u, _ in entries]
    assert doc.error is None


@pytest.mark.parametrize("build,parse", [(urlset, parse_sitemap), (rss, parse_feed)])
def test_a_parse_asked_to_stop_ends_with_stopped(build, parse) -> None:  # type: ignore[no-untyped-def]
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(SourceError) as exc:
        parse(build(dated(2100)), f"{BASE}/s.xml", should_stop=should_stop)
    assert exc.value.reason == "stopped"
