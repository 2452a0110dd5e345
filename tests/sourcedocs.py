"""Sitemap, sitemap index, RSS and Atom documents for the source tests (built here, stdlib only)."""

from __future__ import annotations

import gzip
from xml.sax.saxutils import escape, quoteattr

from mockportal import Page

SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"


def urlset(locs: list[str], *, news: bool = False) -> bytes:
    """A ``<urlset>``; ``news`` makes it a Google News sitemap (``news:news`` per URL)."""
    ns = f' xmlns:news="{NEWS_NS}"' if news else ""
    entries = []
    for i, loc in enumerate(locs):
        extra = (
            "<news:news><news:publication><news:name>甲网</news:name>"
            "<news:language>zh</news:language></news:publication>"
            f"<news:publication_date>2024-03-{i % 28 + 1:02d}T08:00:00+08:00"
            "</news:publication_date><news:title>新闻标题</news:title></news:news>"
            if news else "<lastmod>2024-03-15</lastmod><changefreq>never</changefreq>"
        )
        entries.append(f"<url><loc>{escape(loc)}</loc>{extra}</url>")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SM_NS}"{ns}>'
            + "".join(entries) + "</urlset>").encode()


def sitemap_index(children: list[tuple[str, str | None]]) -> bytes:
    entries = "".join(
        f"<sitemap><loc>{escape(loc)}</loc>"
        + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "") + "</sitemap>"
        for loc, lastmod in children
    )
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{SM_NS}">{entries}'
            "</sitemapindex>").encode()


def rss(links: list[str], *, raw: bool = False) -> bytes:
    """RSS 2.0; ``raw`` writes the links unescaped (a bare ``&``, as broken portals do)."""
    items = "".join(
        f"<item><title>新闻 {i}</title><link>{link if raw else escape(link)}</link>"
        f"<pubDate>Fri, 15 Mar 2024 10:{i % 60:02d}:00 +0800</pubDate></item>"
        for i, link in enumerate(links)
    )
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
            f"<title>甲网</title><link>http://example.com/</link>{items}</channel></rss>").encode()


def atom(links: list[str], *, base: str | None = None) -> bytes:
    base_attr = f" xml:base={quoteattr(base)}" if base else ""
    entries = "".join(
        f"<entry><title>新闻 {i}</title><id>urn:n:{i}</id><updated>2024-03-15T10:00:00Z</updated>"
        f'<link rel="alternate" type="text/html" href={quoteattr(link)}/>'
        f'<link rel="enclosure" href="/v/{i}.mp4"/></entry>'
        for i, link in enumerate(links)
    )
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<feed xmlns="http://www.w3.org/2005/Atom"{base_attr}><title>甲网</title>'
            f"<id>urn:feed</id><updated>2024-03-15T10:00:00Z</updated>{entries}</feed>").encode()


def xml_page(body: bytes, content_type: str = "application/xml") -> Page:
    return Page(body, content_type)


def gzip_page(body: bytes) -> Page:
    """A ``.xml.gz`` file as servers send it: gzip bytes, no Content-Encoding."""
    return Page(gzip.compress(body), "application/x-gzip")
