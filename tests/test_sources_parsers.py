"""Reading sitemaps, sitemap indexes, robots.txt and RSS/Atom feeds (newscrawl.sources)."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest
from sourcedocs import atom, rss, sitemap_index, urlset

from newscrawl.sources import (
    SourceError,
    newest_children,
    parse_feed,
    parse_sitemap,
    robots_sitemaps,
    unpack,
)

BASE = "http://news.example.com"


def test_plain_google_news_and_gzip_urlsets() -> None:
    locs = [f"{BASE}/a/{i}.html" for i in range(3)]
    for body in (urlset(locs), urlset(locs, news=True), gzip.compress(urlset(locs, news=True))):
        doc = parse_sitemap(body, f"{BASE}/sitemap.xml.gz")
        assert (doc.kind, doc.urls, doc.children, doc.error) == ("urlset", locs, [], None)


def test_relative_and_non_http_locs() -> None:
    doc = parse_sitemap(urlset(["/a/1.html", "ftp://x/a", "  ", "b/2.html"]),
                        f"{BASE}/maps/s.xml")
    assert doc.urls == [f"{BASE}/a/1.html", f"{BASE}/maps/b/2.html"]


def test_index_children_with_lastmod() -> None:
    doc = parse_sitemap(sitemap_index([(f"{BASE}/s1.xml", "2024-01-01"),
                                       ("/s2.xml", "2024-03-01T10:00:00+08:00"),
                                       (f"{BASE}/s3.xml", None),
                                       (f"{BASE}/s4.xml", "not a date")]), f"{BASE}/i.xml")
    assert doc.kind == "sitemapindex" and doc.urls == []
    assert doc.children == [
        (f"{BASE}/s1.xml", datetime(2024, 1, 1, tzinfo=UTC)),
        (f"{BASE}/s2.xml", datetime.fromisoformat("2024-03-01T10:00:00+08:00")),
        (f"{BASE}/s3.xml", None),
        (f"{BASE}/s4.xml", None),
    ]
    assert newest_children(doc.children, 10) == ([u for u, _ in doc.children], 0)
    # the newest first; undated ones after dated ones; kept in document order
    assert newest_children(doc.children, 1) == ([f"{BASE}/s2.xml"], 3)
    assert newest_children(doc.children, 3) == (
        [f"{BASE}/s1.xml", f"{BASE}/s2.xml", f"{BASE}/s3.xml"], 1)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "not_xml"),
        (b"   \n", "not_xml"),
        (b"\xef\xbb\xbf<!DOCTYPE html><html><body>404</body></html>", "not_xml"),
        (b"<!-- cms --><html><head></head></html>", "not_xml"),
        (b"\x00\x01\x02 binary", "not_xml"),
        (b'{"urls": []}', "not_xml"),
        (b'<?xml version="1.0"?><catalog><book/></catalog>', "not_sitemap"),
        (b'<?xml version="1.0"?>\n<urlset xmlns="x"><url><lo', "malformed"),
        (b"\x1f\x8b\x08\x00 not really gzip", "malformed"),
    ],
)
def test_unusable_sitemaps(body: bytes, reason: str) -> None:
    with pytest.raises(SourceError) as info:
        parse_sitemap(body, f"{BASE}/sitemap.xml")
    assert info.value.reason == reason


def test_truncated_sitemap_is_recovered() -> None:
    full = urlset([f"{BASE}/a/1.html", f"{BASE}/a/2.html", f"{BASE}/a/3.html"])
    doc = parse_sitemap(full[: full.index(b"/a/3.html")], f"{BASE}/s.xml")
    assert doc.urls[:2] == [f"{BASE}/a/1.html", f"{BASE}/a/2.html"]
    assert doc.error is not None and "line" in doc.error


def test_gzip_bomb_is_bounded() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * 5_000_000 + b"</urlset>")
    assert len(bomb) < 10_000
    with pytest.raises(SourceError) as info:
        parse_sitemap(bomb, f"{BASE}/s.xml.gz", max_bytes=1_000_000)
    assert info.value.reason == "too_large"
    assert len(unpack(bomb, 6_000_000)) == 5_000_017


def test_feed_served_as_sitemap_is_read_as_feed() -> None:
    doc = parse_sitemap(rss([f"{BASE}/a/1.html"]), f"{BASE}/sitemap.xml")
    assert (doc.kind, doc.urls) == ("feed", [f"{BASE}/a/1.html"])


def test_entities_are_not_resolved() -> None:
    xxe = (b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY e SYSTEM "file:///etc/hostname">]>'
           b'<urlset><url><loc>http://x/&e;</loc></url></urlset>')
    doc = parse_sitemap(xxe, f"{BASE}/s.xml")
    assert all("etc" not in u and len(u) < 20 for u in doc.urls)


def test_rss_and_atom_links() -> None:
    doc = parse_feed(rss(["/a/1.html", f"{BASE}/a/2.html?x=1&y=2"]), f"{BASE}/feed.xml",
                     content_type="application/rss+xml")
    assert (doc.kind, doc.urls, doc.error) == (
        "feed", [f"{BASE}/a/1.html", f"{BASE}/a/2.html?x=1&y=2"], None)
    # xml:base and relative hrefs; the enclosure links are not articles
    doc = parse_feed(atom(["3.html", "/a/4.html"], base=f"{BASE}/news/"), f"{BASE}/atom")
    assert doc.urls == [f"{BASE}/news/3.html", f"{BASE}/a/4.html"]


def test_rss_with_bare_ampersands_keeps_the_whole_link() -> None:
    # lxml's recovery would read "?x=1=2" here; feedparser keeps the query whole
    doc = parse_feed(rss([f"{BASE}/a/1.html?x=1&y=2", f"{BASE}/a/2.html"], raw=True),
                     f"{BASE}/feed.xml")
    assert doc.urls == [f"{BASE}/a/1.html?x=1&y=2", f"{BASE}/a/2.html"]
    assert doc.error is not None  # counted as recovered


def test_rss_guid_permalink_and_rdf() -> None:
    body = (b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
            b'<item><guid isPermaLink="true">http://news.example.com/a/9.html</guid></item>'
            b'<item><guid isPermaLink="false">id-10</guid></item></channel></rss>')
    assert parse_feed(body, f"{BASE}/f").urls == [f"{BASE}/a/9.html"]
    rdf = (b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax'
           b'-ns#" xmlns="http://purl.org/rss/1.0/"><channel rdf:about="x"><title>t</title>'
           b'</channel><item rdf:about="http://news.example.com/a/11.html"><title>a</title>'
           b"<link>http://news.example.com/a/11.html</link></item></rdf:RDF>")
    assert parse_feed(rdf, f"{BASE}/f").urls == [f"{BASE}/a/11.html"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "not_xml"),
        (b"<!DOCTYPE html><html><body>feed moved</body></html>", "not_xml"),
        (b'{"items": []}', "not_xml"),
        (b'<?xml version="1.0"?><catalog><book/></catalog>', "not_feed"),
        (b'<rss version="2.0"><chan', "malformed"),
    ],
)
def test_unusable_feeds(body: bytes, reason: str) -> None:
    with pytest.raises(SourceError) as info:
        parse_feed(body, f"{BASE}/feed.xml")
    assert info.value.reason == reason


def test_empty_feed_is_fine() -> None:
    body = b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title></channel></rss>'
    doc = parse_feed(body, f"{BASE}/f")
    assert (doc.urls, doc.error) == ([], None)


def test_feed_bytes_are_never_opened_as_a_path(tmp_path: object) -> None:
    # feedparser opens a str/bytes argument that names a file: the reader passes a stream
    with pytest.raises(SourceError):
        parse_feed(b"/etc/hostname", f"{BASE}/f")


def test_robots_sitemap_lines() -> None:
    body = (b"User-agent: *\nDisallow: /private/\nSitemap: /sitemap.xml\n"
            b"  sitemap:  https://cdn.example.com/news.xml.gz \nSitemap: /sitemap.xml\n"
            b"Sitemap: ftp://x/y\n")
    assert robots_sitemaps(body, f"{BASE}/robots.txt") == [
        f"{BASE}/sitemap.xml", "https://cdn.example.com/news.xml.gz"]
    assert robots_sitemaps(b"User-agent: *\n", f"{BASE}/robots.txt") == []
