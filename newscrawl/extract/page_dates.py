"""Where a page states its own publication date: ``<meta>`` tags, JSON-LD ``datePublished``,
``<time datetime>`` elements, and the time zone printed next to its dates.

See docs/design/extraction.md.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, timedelta, timezone

import lxml.html
from lxml import etree

from newscrawl.extract._jsonld import page_objects
from newscrawl.extract.dates import ParsedDate, parse_date

__all__ = ["meta_date", "stated_zone", "time_element_date", "time_texts"]

_META_DATE_XPATH = etree.XPath(
    "//meta[@property='article:published_time' or @name='article:published_time'"
    " or @itemprop='datePublished' or @name='pubdate' or @name='PubDate' or @name='publishdate'"
    " or @name='publish_date' or @name='publishDate' or @name='og:release_date'"
    " or @property='og:release_date' or @name='parsely-pub-date' or @name='sailthru.date'"
    " or @name='dc.date.issued' or @name='DC.date.issued' or @name='dcterms.created'"
    " or @name='datePublished' or @name='weibo: article:create_at'"
    " or @name='apub:time' or @name='firstpublishedtime' or @name='release_date']/@content"
    " | //*[@itemprop='datePublished']/@datetime"
    " | //*[@itemprop='datePublished']/@content"
)
_JSONLD_XPATH = etree.XPath("//script[@type='application/ld+json']/text()")
_JSONLD_DATE = re.compile(r'"datePublished"\s*:\s*"([^"]{8,40})"')
# JSON-LD keys whose objects are not the page (a fact-check's reviewed claim and where it appeared).
_NOT_THE_PAGE = frozenset({"itemReviewed", "appearance", "firstAppearance", "claimReviewed",
                           "isBasedOn", "citation", "mentions", "about"})
_TIME_XPATH = etree.XPath("//body//time[@datetime][not(ancestor::a)]")
# A zone written next to a date or time: "UTC", "GMT", "UTC+8", "GMT-05:00", "北京时间".
_ZONE_WORD = re.compile(
    r"(?<![A-Za-z])(?:UTC|GMT)(?:\s*(?P<sign>[+\-−])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?)?(?![A-Za-z])"
    r"|(?P<cst>北京时间)"
)


def _jsonld_date(raw: str) -> str | None:
    """The page's own ``datePublished`` in a JSON-LD block: the outermost one, never one inside
    the thing a fact-check reviews (``itemReviewed``: the statement checked has its own date)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        m = _JSONLD_DATE.search(raw)  # broken JSON: the first one written
        return m.group(1) if m else None
    for node in page_objects(data, _NOT_THE_PAGE):
        value = node.get("datePublished")
        if isinstance(value, str):
            return value
    return None



def meta_date(tree: lxml.html.HtmlElement) -> ParsedDate | None:
    for value in _META_DATE_XPATH(tree):
        parsed = parse_date(str(value))
        if parsed is not None:
            return parsed
    for script in _JSONLD_XPATH(tree):
        parsed = parse_date(_jsonld_date(str(script)))
        if parsed is not None:
            return parsed
    return None


def time_texts(tree: lxml.html.HtmlElement) -> str:
    """The visible text of the page's ``<time>`` elements (where a zone is often printed)."""
    return " ".join(str(el.text_content()) for el in _TIME_XPATH(tree))


def time_element_date(tree: lxml.html.HtmlElement) -> ParsedDate | None:
    """The first ``<time datetime>`` of the page that is not in a link (a list of other
    articles): how many pages print their own date."""
    for el in _TIME_XPATH(tree):
        parsed = parse_date(el.get("datetime"))
        if parsed is not None:
            return parsed
    return None


def stated_zone(texts: list[str]) -> timezone | None:
    """The time zone a page states next to its dates ("10:20 UTC", "GMT+8", "北京时间")."""
    for text in texts:
        m = _ZONE_WORD.search(text)
        if m is None:
            continue
        if m.group("cst"):
            return timezone(timedelta(hours=8))
        sign, hours, minutes = m.group("sign"), m.group("h"), m.group("m")
        if not sign:
            return UTC
        offset = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if offset <= timedelta(hours=14):
            return timezone(-offset if sign in "-−" else offset)
    return None

