"""Reading RSS and Atom feeds: feedparser for any feed (it also reads the broken feeds portals
serve, in batches when large), lxml ``iterparse`` for a large well-formed UTF-8 RSS 2.0 or Atom
1.0 feed, taking exactly what feedparser would. Design: docs/design/sources.md.
"""

from __future__ import annotations

import calendar
import io
import re
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

# feedparser's notes that are no fault of the document
_BENIGN_FEED_ERRORS = frozenset({"NonXMLContentType", "CharacterEncodingOverride"})
#: Feed entries parsed by one feedparser call: a larger feed is parsed in batches of this many.
FEED_BATCH_ENTRIES = 500
_FEED_ENTRY_START = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?(?:item|entry)[\s>/]")
_FEED_ENTRY_END = re.compile(rb"</(?:[A-Za-z_][\w.-]*:)?(?:item|entry)\s*>")


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


def _large_clean_feed(data: bytes, content_type: str, url: str, newest: Newest,
                      should_stop: Callable[[], bool] | None) -> bool:
    """Read a large, well-formed UTF-8 RSS 2.0 or Atom 1.0 feed with lxml (faster than
    feedparser: docs/design/sources.md), adding each entry's link and date to ``newest``; False
    (nothing kept) when the feed is small, not well-formed, in another encoding or format, or has
    a date lxml's readers cannot parse: feedparser then reads it."""
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
                if is_http(resolved):
                    newest.add(resolved, when)
            elem.clear()
            parent = elem.getparent()
            while parent is not None and elem.getprevious() is not None:
                del parent[0]
            entries += 1
            if entries % STOP_CHECK_EVERY == 0:
                check_stop(should_stop)
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
    if HTML_START.match(data[:4096]):
        raise SourceError("not_xml", "an HTML page, not a feed")
    headers = {"content-location": url}
    if content_type:
        headers["content-type"] = content_type
    newest = Newest(max_entries, select)
    if _large_clean_feed(data, content_type, url, newest, should_stop):
        fast = SourceDocument(kind="feed")
        fast.keep(newest)
        return fast
    newest = Newest(max_entries, select)  # the fast path gave up: start over with feedparser
    doc: SourceDocument | None = None
    for part in _feed_batches(data, FEED_BATCH_ENTRIES):
        check_stop(should_stop)
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
                     newest: Newest) -> SourceDocument:
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
        if is_http(resolved):
            newest.add(resolved, _entry_date(entry))
    return doc
