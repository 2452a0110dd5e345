"""Bounds on reading one sitemap or feed (newscrawl.sources): the newest ``max_entries`` article
URLs are kept and the rest counted; a large well-formed feed is read with lxml and gives what
feedparser gives, a large broken one is given to feedparser in batches (the same URLs; the memory
is measured by benchmarks/bench_sources_large.py); a parse asked to stop ends with ``stopped``."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from xml.sax.saxutils import escape

import feedparser
import pytest

from newscrawl.sources import FEED_BATCH_ENTRIES, SourceError, feeds, parse_feed, parse_sitemap
from newscrawl.sources.document import Newest

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


def test_a_large_broken_feed_is_read_by_feedparser_in_batches_with_the_same_links() -> None:
    entries = dated(FEED_BATCH_ENTRIES * 2 + 7)
    entries[3] = (f"{BASE}/a/x.html?a=1&b=2", entries[3][1])
    body = rss(entries).replace(b"?a=1&amp;b=2", b"?a=1&b=2")  # a bare "&": not well-formed
    whole = [e.link for e in feedparser.parse(body).entries]
    doc = parse_feed(body, f"{BASE}/feed.xml")
    assert doc.urls == whole == [u for u, _ in entries]
    assert doc.error is not None  # read anyway, counted as recovered


def mixed_rss(n: int) -> bytes:
    """RSS 2.0 items with a link, a relative link, a permalink guid only, pubDate or dc:date."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    items = []
    for i in range(n):
        when = start - timedelta(minutes=(i * 7919) % 10007)
        kind = i % 4
        link = (f"<link>{BASE}/a/{i}.html</link>" if kind == 0 else
                f"<link> /rel/{i}.html </link>" if kind == 1 else
                f"<guid>{BASE}/g/{i}.html</guid>" if kind == 2 else
                f'<guid isPermaLink="false">id{i}</guid><link>{BASE}/b/{i}.html</link>')
        date = (f"<dc:date>{when.isoformat()}</dc:date>" if kind == 3 else
                "" if i % 10 == 5 else f"<pubDate>{format_datetime(when)}</pubDate>")
        items.append(f"<item><title>新闻 {i}</title>{link}{date}</item>")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" xmlns:dc='
            '"http://purl.org/dc/elements/1.1/"><channel><title>甲网</title>'
            f"<link>{BASE}/</link>{''.join(items)}</channel></rss>").encode()


def mixed_atom(n: int) -> bytes:
    """Atom entries with relative links under xml:base, published or updated only."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    entries = []
    for i in range(n):
        when = (start - timedelta(minutes=(i * 7919) % 10007)).isoformat()
        date = f"<published>{when}</published>" if i % 2 else f"<updated>{when}</updated>"
        href = f"{i}.html" if i % 3 else f"/abs/{i}.html"
        entries.append(f'<entry><title>新闻 {i}</title><id>urn:{i}</id><link href="{href}"/>'
                       f'<link rel="enclosure" href="/v/{i}.mp4"/>{date}</entry>')
    return ('<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom"'
            f' xml:base="{BASE}/news/"><title>甲网</title><id>urn:feed</id>'
            f"{''.join(entries)}</feed>").encode()


@pytest.mark.parametrize("build", [mixed_rss, mixed_atom])
@pytest.mark.parametrize("limit", [None, 100])
def test_a_large_clean_feed_is_read_fast_as_feedparser_reads_it(
        build, limit, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    body = build(FEED_BATCH_ENTRIES + 300)
    assert feeds._large_clean_feed(body, "", f"{BASE}/feed.xml", Newest(None), None)
    fast = parse_feed(body, f"{BASE}/feed.xml", max_entries=limit)
    monkeypatch.setattr(feeds, "_large_clean_feed", lambda *args: False)
    slow = parse_feed(body, f"{BASE}/feed.xml", max_entries=limit)
    assert fast.urls == slow.urls and fast.capped == slow.capped
    assert len(fast.urls) == (limit or FEED_BATCH_ENTRIES + 300)


@pytest.mark.parametrize("build,parse", [(urlset, parse_sitemap), (rss, parse_feed)])
def test_a_parse_asked_to_stop_ends_with_stopped(build, parse) -> None:  # type: ignore[no-untyped-def]
    asked = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(SourceError) as exc:
        parse(build(dated(2100)), f"{BASE}/s.xml", should_stop=should_stop)
    assert exc.value.reason == "stopped"
