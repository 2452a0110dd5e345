"""Reading sitemaps (``<urlset>``, plain or Google News, and ``<sitemapindex>``, gzipped or
not) with Scrapy's own sitemap reader, and the ``Sitemap:`` lines of robots.txt; a sitemap URL
that serves a feed is read as a feed. Design: docs/design/sources.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urljoin

from newscrawl.defaults import SITEMAP_MAX_BYTES as DEFAULT_MAX_BYTES
from newscrawl.sources.document import (
    HTML_START,
    STOP_CHECK_EVERY,
    Newest,
    Select,
    SourceDocument,
    SourceError,
    check_stop,
    is_http,
    unpack,
)
from newscrawl.sources.feeds import parse_feed

_FEED_ROOTS = frozenset({"rss", "feed", "rdf"})


def _lastmod(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_sitemap(body: bytes, url: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                  content_type: str = "", max_entries: int | None = None,
                  should_stop: Callable[[], bool] | None = None,
                  select: Select | None = None) -> SourceDocument:
    """Read a sitemap (or a feed served as one); :class:`SourceError` when unusable.
    ``select`` filters the article entries before ``max_entries`` is applied."""
    from lxml.etree import XMLSyntaxError

    data = unpack(body, max_bytes)
    if not data.strip():
        raise SourceError("not_xml", "empty document")
    if HTML_START.match(data[:4096]):
        raise SourceError("not_xml", "an HTML page, not XML")
    try:
        sitemap = _sitemap_class()(data)
    except (XMLSyntaxError, StopIteration) as exc:
        raise SourceError("not_xml", f"not XML ({str(exc) or 'no root element'})") from None
    root = sitemap.type.lower()
    if root in _FEED_ROOTS:
        return parse_feed(data, url, content_type=content_type, max_bytes=max_bytes,
                          max_entries=max_entries, should_stop=should_stop, select=select)
    if root not in ("urlset", "sitemapindex"):
        raise SourceError("not_xml" if root == "html" else "not_sitemap",
                          f"root element <{sitemap.type}> is not <urlset> or <sitemapindex>")
    doc = SourceDocument(kind=root)
    newest = Newest(max_entries, select)
    for count, entry in enumerate(_entries(sitemap), 1):
        if count % STOP_CHECK_EVERY == 0:
            check_stop(should_stop)
        loc = str(entry.get("loc") or "").strip()
        loc = urljoin(url, loc) if loc else ""
        if not is_http(loc):
            continue
        if root == "sitemapindex":
            doc.children.append((loc, _lastmod(entry.get("lastmod"))))
        else:
            newest.add(loc, _lastmod(entry.get("publication_date"))
                       or _lastmod(entry.get("lastmod")))
    doc.keep(newest)
    log = getattr(sitemap.xmliter, "error_log", None)
    errors = log.filter_from_errors() if log is not None else None  # not mere warnings
    if errors:
        first = errors[0]
        doc.error = f"line {first.line}: {first.message}"
        if not newest.listed and not doc.children:  # (a cap may have left no URL: not this)
            raise SourceError("malformed", f"XML errors and no entry read ({doc.error})")
    return doc


_SITEMAP_CLASS: Any = None


def _sitemap_class() -> Any:
    """Scrapy's :class:`~scrapy.utils.sitemap.Sitemap`, also reading a Google News entry's
    ``<news:news><news:publication_date>`` (Scrapy keeps only an entry's direct children)."""
    global _SITEMAP_CLASS
    if _SITEMAP_CLASS is None:
        from scrapy.utils.sitemap import Sitemap

        class NewsSitemap(Sitemap):
            __slots__ = ()

            def _process_sitemap_element(self, elem: Any) -> dict[str, Any] | None:
                published = next(
                    (str(grand.text).strip() for child in elem
                     if self._get_tag_name(child) == "news" for grand in child
                     if self._get_tag_name(grand) == "publication_date" and grand.text), None)
                entry: dict[str, Any] | None = super()._process_sitemap_element(elem)
                if entry is not None and published:
                    entry["publication_date"] = published
                return entry

        _SITEMAP_CLASS = NewsSitemap
    return _SITEMAP_CLASS


def _entries(sitemap: Any) -> Iterator[dict[str, Any]]:
    from lxml.etree import XMLSyntaxError

    try:
        yield from sitemap
    except XMLSyntaxError:  # recovery gave up: keep what was read
        return


def newest_children(children: list[tuple[str, datetime | None]],
                    limit: int) -> tuple[list[str], int]:
    """At most ``limit`` child sitemaps, those with the latest ``lastmod`` first (undated ones
    after dated ones, in document order); returns (urls, number left out)."""
    if len(children) <= limit:
        return [u for u, _ in children], 0
    oldest = datetime.min.replace(tzinfo=UTC)
    ranked = sorted(enumerate(children),
                    key=lambda item: (item[1][1] is not None, item[1][1] or oldest, -item[0]),
                    reverse=True)
    kept = sorted(ranked[:limit])
    return [u for _, (u, _) in kept], len(children) - limit

def robots_sitemaps(body: bytes, url: str) -> list[str]:
    """The ``Sitemap:`` URLs of a robots.txt (absolute, in file order, no repeats)."""
    from scrapy.utils.sitemap import sitemap_urls_from_robots

    seen: dict[str, None] = {}
    for found in sitemap_urls_from_robots(body, base_url=url):
        if is_http(found):
            seen.setdefault(found, None)
    return list(seen)
