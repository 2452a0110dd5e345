"""Sitemaps and feeds as sources of article URLs: reading the documents, never fetching them.

* Sitemaps (``<urlset>``, plain or Google News, and ``<sitemapindex>``) are parsed with Scrapy's
  own :class:`scrapy.utils.sitemap.Sitemap` (lxml, entities not resolved, no network), gzip bodies
  (``.xml.gz`` or any body starting with the gzip magic) are unpacked with
  :func:`scrapy.utils.gz.gunzip` under a size bound, ``Sitemap:`` lines of robots.txt are read
  with :func:`scrapy.utils.sitemap.sitemap_urls_from_robots`. A sitemap URL that serves an RSS or
  Atom feed is read as a feed (search engines accept feeds as sitemaps too).
* Feeds (RSS 0.9x/1.0/2.0, Atom 0.3/1.0) are parsed with ``feedparser``, which also reads the
  broken feeds real portals serve (an unescaped ``&`` in a link, a wrong declared encoding),
  where lxml's recovery mode silently cuts such a link to ``?a=1=2``.

Bounds: one document is at most ``max_bytes`` once unpacked; of its article URLs the
``max_entries`` newest are kept (by ``<news:publication_date>`` or ``<lastmod>``, or a feed
entry's published/updated date; undated ones after dated ones, in document order), the number
left out is ``capped``. The caller's ``select`` (the site's rules: the spider passes its
``article_url``, allowed domains, canonical form and done records) sees every entry before the
cap, in batches of :data:`SELECT_BATCH`, so the cap counts only the entries the caller wants.
Sitemaps are read as a stream (lxml ``iterparse``, each entry cleared once read); so is a large
feed that is well-formed UTF-8 RSS 2.0 or Atom 1.0 (:func:`_large_clean_feed`, which gives up
on anything it cannot read as feedparser would); any other large feed is given to feedparser
in batches of :data:`FEED_BATCH_ENTRIES` entries, so what it builds per entry never exists for
the whole document at once. ``should_stop`` is asked between entries and batches: when
it says True, :class:`SourceError` ``stopped`` ends the parse within one batch (a crawl that is
stopping). The parsers run in a worker thread of the crawl (newscrawl/spiders/portal.py).

Every way a document cannot be used raises :class:`SourceError` with a short ``reason`` for the
stats (``too_large``, ``not_xml``, ``not_sitemap``, ``not_feed``, ``malformed``); documents with
XML errors from which entries could still be read come back with ``error`` set (counted as
``recovered``).
Imports no Redis; from Scrapy only its sitemap and gzip utilities.
"""

from __future__ import annotations

import calendar
import heapq
import io
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from newscrawl.defaults import SITEMAP_MAX_BYTES as DEFAULT_MAX_BYTES
from newscrawl.defaults import SITEMAP_MAX_CHILDREN as DEFAULT_MAX_CHILDREN
from newscrawl.defaults import SITEMAP_MAX_DEPTH as DEFAULT_MAX_DEPTH
from newscrawl.defaults import SITEMAP_MAX_ENTRIES as DEFAULT_MAX_ENTRIES
from newscrawl.defaults import SITEMAP_MAX_RUN_ENTRIES as DEFAULT_MAX_RUN_ENTRIES
from newscrawl.errors import NewscrawlError

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

_FEED_ROOTS = frozenset({"rss", "feed", "rdf"})
_GZIP_MAGIC = b"\x1f\x8b"
_HTML_START = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)
# feedparser's notes that are no fault of the document
_BENIGN_FEED_ERRORS = frozenset({"NonXMLContentType", "CharacterEncodingOverride"})
#: Feed entries parsed by one feedparser call: a larger feed is parsed in batches of this many.
FEED_BATCH_ENTRIES = 500
#: Entries handed to ``select`` at once (one done-records round trip each in the crawl).
SELECT_BATCH = 1000
#: ``should_stop`` is asked every this many sitemap entries.
_STOP_CHECK_EVERY = 1000
_FEED_ENTRY_START = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)[\s>/]")
_FEED_ENTRY_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?(?:item|entry)\s*>")


#: A listed entry: its absolute URL and the date the document gives it (aware), or None.
Entry = tuple[str, "datetime | None"]
#: The caller's filter, applied before any cap: for each entry of a batch (document order),
#: the entry to keep (its URL may be rewritten, e.g. to its canonical form) or, for one it does
#: not want, a short reason (counted in :attr:`SourceDocument.rejected`). It may be called again
#: for the same entries (a feed the fast path gives up on is read again), so it keeps no state.
Select = Callable[[list[Entry]], list["Entry | str"]]


class SourceError(NewscrawlError, ValueError):
    """A sitemap or feed that cannot be used; ``reason`` is a stats-friendly name."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SourcesConfig:
    """Bounds on reading sitemaps and feeds (settings ``NEWSCRAWL_SITEMAP_*``)."""

    max_bytes: int = DEFAULT_MAX_BYTES  # decompressed size of one gzip sitemap or feed
    max_depth: int = DEFAULT_MAX_DEPTH  # sitemap index nesting below a configured sitemap
    max_children: int = DEFAULT_MAX_CHILDREN  # child sitemaps taken from one index (newest)
    max_entries: int = DEFAULT_MAX_ENTRIES  # article URLs taken from one document (newest)
    max_run_entries: int = DEFAULT_MAX_RUN_ENTRIES  # ... from all documents of a site and run

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> SourcesConfig:
        return cls(
            max_bytes=max(0, settings.getint("NEWSCRAWL_SITEMAP_MAX_BYTES", DEFAULT_MAX_BYTES)),
            max_depth=max(0, settings.getint("NEWSCRAWL_SITEMAP_MAX_DEPTH", DEFAULT_MAX_DEPTH)),
            max_children=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_CHILDREN", DEFAULT_MAX_CHILDREN)
            ),
            max_entries=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_ENTRIES", DEFAULT_MAX_ENTRIES)
            ),
            max_run_entries=max(
                0, settings.getint("NEWSCRAWL_SITEMAP_MAX_RUN_ENTRIES", DEFAULT_MAX_RUN_ENTRIES)
            ),
        )


@dataclass
class SourceDocument:
    """What a sitemap or feed lists.

    ``kind`` is ``urlset``, ``sitemapindex`` or ``feed``; ``urls`` are absolute (relative links
    resolved against the document URL), in document order; ``entries`` the same URLs with the
    date the document gives each (a sitemap's ``<news:publication_date>`` or else its
    ``<lastmod>``, a feed entry's published or else updated date; an aware datetime, or None);
    ``children`` are the child sitemaps of an index as (url, lastmod or None); ``error`` the
    first XML error the parser recovered from, None for a clean document; ``listed`` the article
    entries read, ``wanted`` the distinct ones ``select`` kept (all of them without one),
    ``rejected`` the reasons ``select`` gave for the others (reason -> count), ``capped`` the
    wanted ones left out by ``max_entries``.
    """

    kind: str
    urls: list[str] = field(default_factory=list)
    children: list[tuple[str, datetime | None]] = field(default_factory=list)
    error: str | None = None
    capped: int = 0
    entries: list[Entry] = field(default_factory=list)
    listed: int = 0
    wanted: int = 0
    rejected: dict[str, int] = field(default_factory=dict)

    def keep(self, newest: _Newest) -> None:
        """Take the entries and counts of ``newest`` (its pending batch selected first)."""
        self.entries = newest.entries()
        self.urls = [url for url, _ in self.entries]
        self.capped, self.listed, self.wanted = newest.left_out, newest.listed, newest.seen
        self.rejected = dict(newest.rejected)


class _Newest:
    """The ``limit`` newest of the URLs added that ``select`` wants (dated before undated, then
    document order), kept in a heap of at most ``limit`` entries. Added entries wait in a batch
    of up to :data:`SELECT_BATCH` for ``select``."""

    _OLDEST = datetime.min.replace(tzinfo=UTC)

    def __init__(self, limit: int | None, select: Select | None = None) -> None:
        self.limit = limit
        self.select = select
        self.heap: list[tuple[bool, datetime, int, str, datetime | None]] = []
        self.seen = 0  # wanted entries (after select, each URL once)
        self.listed = 0  # entries added
        self.rejected: dict[str, int] = {}
        self._batch: list[Entry] = []
        self._wanted: set[str] = set()  # with select: the URLs kept so far (each once)

    def add(self, url: str, when: datetime | None) -> None:
        self.listed += 1
        if self.select is None:
            self._keep(url, when)
            return
        self._batch.append((url, when))
        if len(self._batch) >= SELECT_BATCH:
            self.flush()

    def flush(self) -> None:
        """Give the pending batch to ``select`` and keep what it wants."""
        batch, self._batch = self._batch, []
        if not batch or self.select is None:
            return
        for verdict in self.select(batch):
            if isinstance(verdict, str):
                self.rejected[verdict] = self.rejected.get(verdict, 0) + 1
            elif verdict[0] not in self._wanted:
                self._wanted.add(verdict[0])
                self._keep(*verdict)

    def _keep(self, url: str, when: datetime | None) -> None:
        # the heap's smallest is the one to drop first: undated, oldest, latest in the document
        entry = (when is not None, when or self._OLDEST, -self.seen, url, when)
        self.seen += 1
        if self.limit is None or len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif self.heap and entry[:4] > self.heap[0][:4]:
            heapq.heapreplace(self.heap, entry)

    def entries(self) -> list[Entry]:
        """The kept entries in document order (the pending batch selected first)."""
        self.flush()
        return [(e[3], e[4]) for e in sorted(self.heap, key=lambda e: -e[2])]

    def urls(self) -> list[str]:
        """The kept URLs in document order."""
        return [url for url, _ in self.entries()]

    @property
    def left_out(self) -> int:
        return self.seen - len(self.heap)


def _stopped(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        raise SourceError("stopped", "the crawl is stopping")


def unpack(body: bytes, max_bytes: int) -> bytes:
    """The body, gunzipped when it starts with the gzip magic (at most ``max_bytes``)."""
    if body[:2] != _GZIP_MAGIC:
        return body
    from scrapy.utils.gz import gunzip

    try:
        return gunzip(body, max_size=max_bytes)
    except ValueError as exc:  # scrapy's _DecompressionMaxSizeExceeded is a ValueError
        raise SourceError("too_large", f"over {max_bytes} bytes once gunzipped ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise SourceError("malformed", f"broken gzip data ({exc})") from None


def _http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


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
    if _HTML_START.match(data[:4096]):
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
    newest = _Newest(max_entries, select)
    for count, entry in enumerate(_entries(sitemap), 1):
        if count % _STOP_CHECK_EVERY == 0:
            _stopped(should_stop)
        loc = str(entry.get("loc") or "").strip()
        loc = urljoin(url, loc) if loc else ""
        if not _http(loc):
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


def _feed_batches(data: bytes, batch: int) -> Iterator[bytes]:
    """The feed as documents of at most ``batch`` entries each: the text before the first entry,
    a run of entries, the text after the last one. A feed of at most ``batch`` entries, or one
    whose entries cannot be told apart, is one document."""
    first = _FEED_ENTRY_START.search(data)
    count, last = 0, 0
    if first is not None:
        for match in _FEED_ENTRY_END.finditer(data, first.start()):
            count, last = count + 1, match.end()
    if first is None or count <= batch:
        yield data
        return
    head, tail = data[:first.start()], data[last:]
    start = first.start()
    for number, match in enumerate(_FEED_ENTRY_END.finditer(data, start), 1):
        if number % batch == 0 or number == count:
            yield head + data[start:match.end()] + tail
            start = match.end()


_ATOM = "{http://www.w3.org/2005/Atom}"
_DC_DATE = "{http://purl.org/dc/elements/1.1/}date"
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([^"']+)["']""")


class _NotClean(Exception):
    """The fast path cannot read this feed exactly as feedparser would."""


def _iso_date(text: str) -> datetime:
    value = datetime.fromisoformat(text.strip())
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0)


def _rfc822_date(text: str) -> datetime:
    from email.utils import parsedate_to_datetime

    value = parsedate_to_datetime(text.strip())
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _date_of(elem: Any, tags: tuple[str, ...], parse: Callable[[str], datetime]
             ) -> datetime | None:
    for tag in tags:
        child = elem.find(tag)
        if child is not None and (child.text or "").strip():
            try:
                return parse(child.text)
            except (ValueError, TypeError, IndexError, OverflowError):
                raise _NotClean from None  # feedparser knows more date formats
    return None


def _large_clean_feed(data: bytes, content_type: str, url: str, newest: _Newest,
                      should_stop: Callable[[], bool] | None) -> bool:
    """Read a large, well-formed UTF-8 RSS 2.0 or Atom 1.0 feed with lxml (tens of times faster
    than feedparser), adding each entry's link and date to ``newest``; False (nothing kept) when
    the feed is small, not well-formed, in another encoding or format, or has a date lxml's
    readers cannot parse: feedparser then reads it."""
    from lxml import etree

    declared = _XML_ENCODING.match(data[:200])
    charset = content_type.lower().partition("charset=")[2].split(";")[0].strip(" \"'")
    if (declared and declared.group(1).lower() not in (b"utf-8", b"utf8")) \
            or charset not in ("", "utf-8", "utf8"):
        return False
    starts = _FEED_ENTRY_START.finditer(data)
    if sum(1 for _ in zip(starts, range(FEED_BATCH_ENTRIES + 1), strict=False)) \
            <= FEED_BATCH_ENTRIES:
        return False
    try:
        data.decode("utf-8")
        root_tag = None
        entries = 0
        for event, elem in etree.iterparse(
                io.BytesIO(data), events=("start", "end"), resolve_entities=False,
                no_network=True, remove_comments=True, remove_pis=True):
            if root_tag is None:
                root_tag = elem.tag
                if root_tag not in ("rss", f"{_ATOM}feed") or (
                        root_tag == "rss" and elem.get("version") not in ("2.0", "0.91", "0.92")):
                    return False
                continue
            if event != "end":
                continue
            if elem.tag == "item" and root_tag == "rss":
                link = (elem.findtext("link") or "").strip()
                if not link:
                    guid = elem.find("guid")
                    if guid is not None and guid.get("isPermaLink", "true").lower() != "false":
                        link = (guid.text or "").strip()
                if not link:
                    raise _NotClean  # feedparser may find one elsewhere (an atom:link)
                when = _date_of(elem, ("pubDate",), _rfc822_date) \
                    or _date_of(elem, (_DC_DATE,), _iso_date)
            elif elem.tag == f"{_ATOM}entry":
                alternates = [str(li.get("href")).strip() for li in elem.findall(f"{_ATOM}link")
                              if li.get("rel", "alternate") == "alternate" and li.get("href")]
                if len(alternates) != 1:
                    raise _NotClean  # none, or a choice feedparser makes by type
                link = urljoin(urljoin(url, elem.base or ""), alternates[0])
                when = _date_of(elem, (f"{_ATOM}published", f"{_ATOM}updated"), _iso_date)
            else:
                continue
            if link:
                resolved = urljoin(url, link)
                if _http(resolved):
                    newest.add(resolved, when)
            elem.clear()
            parent = elem.getparent()
            while parent is not None and elem.getprevious() is not None:
                del parent[0]
            entries += 1
            if entries % _STOP_CHECK_EVERY == 0:
                _stopped(should_stop)
    except (etree.XMLSyntaxError, UnicodeDecodeError, _NotClean):
        return False
    return root_tag is not None


def _entry_date(entry: Any) -> datetime | None:
    for key in ("published_parsed", "updated_parsed"):
        value = entry.get(key)
        if value:
            try:
                return datetime.fromtimestamp(calendar.timegm(value), tz=UTC)
            except (OverflowError, ValueError, TypeError):
                return None
    return None


def parse_feed(body: bytes, url: str, *, content_type: str = "",
               max_bytes: int = DEFAULT_MAX_BYTES, max_entries: int | None = None,
               should_stop: Callable[[], bool] | None = None,
               select: Select | None = None) -> SourceDocument:
    """Read an RSS or Atom feed: the link of each entry; :class:`SourceError` when unusable.
    ``select`` filters the entries before ``max_entries`` is applied."""
    data = unpack(body, max_bytes)
    if not data.strip():
        raise SourceError("not_xml", "empty document")
    if _HTML_START.match(data[:4096]):
        raise SourceError("not_xml", "an HTML page, not a feed")
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    newest = _Newest(max_entries, select)
    if _large_clean_feed(data, content_type, url, newest, should_stop):
        fast = SourceDocument(kind="feed")
        fast.keep(newest)
        return fast
    newest = _Newest(max_entries, select)  # the fast path gave up: start over with feedparser
    doc: SourceDocument | None = None
    for part in _feed_batches(data, FEED_BATCH_ENTRIES):
        _stopped(should_stop)
        try:
            read = _parse_feed_part(part, url, headers, newest)
        except SourceError as exc:
            if doc is None:
                raise  # the first part says whether this is a feed at all
            doc.error = doc.error or str(exc)  # a later batch: keep what was read
            continue
        if doc is None:
            doc = read
        elif doc.error is None:
            doc.error = read.error
    assert doc is not None
    doc.keep(newest)
    return doc


def _parse_feed_part(data: bytes, url: str, headers: dict[str, str],
                     newest: _Newest) -> SourceDocument:
    import feedparser

    # A stream, never bytes or str: feedparser opens a str that looks like a URL or a file path.
    parsed = feedparser.parse(io.BytesIO(data), response_headers=headers,
                              sanitize_html=False, resolve_relative_uris=False)
    problem = parsed.get("bozo_exception") if parsed.get("bozo") else None
    error = None
    if problem is not None and type(problem).__name__ not in _BENIGN_FEED_ERRORS:
        error = str(problem) or type(problem).__name__
    if not parsed.get("version") and not parsed.entries:
        if error is not None and not data.lstrip()[:1] == b"<":
            raise SourceError("not_xml", f"not XML ({error})")
        if error is not None:
            raise SourceError("malformed", f"not a readable feed ({error})")
        raise SourceError("not_feed", "XML, but not an RSS or Atom feed")
    if error is not None and not parsed.entries:
        raise SourceError("malformed", f"XML errors and no entry read ({error})")
    doc = SourceDocument(kind="feed", error=error)
    for entry in parsed.entries:
        link = entry.get("link")
        if not link:
            link = next((li.get("href") for li in entry.get("links", [])
                         if li.get("rel", "alternate") == "alternate" and li.get("href")), None)
        link = str(link or "").strip()
        if not link:
            continue
        resolved = urljoin(url, link)
        if _http(resolved):
            newest.add(resolved, _entry_date(entry))
    return doc


def robots_sitemaps(body: bytes, url: str) -> list[str]:
    """The ``Sitemap:`` URLs of a robots.txt (absolute, in file order, no repeats)."""
    from scrapy.utils.sitemap import sitemap_urls_from_robots

    seen: dict[str, None] = {}
    for found in sitemap_urls_from_robots(body, base_url=url):
        if _http(found):
            seen.setdefault(found, None)
    return list(seen)
