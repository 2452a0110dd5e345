"""Article extraction: trafilatura for the body, the page's agreed title, metadata and date lines.

See docs/design/extraction.md for the measurements behind each choice.
"""

from __future__ import annotations

import bisect
import copy
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, timedelta, timezone

import lxml.html
import trafilatura
from lxml import etree
from trafilatura.metadata import extract_metadata
from trafilatura.utils import load_html

from newscrawl.extract._jsonld import page_objects
from newscrawl.extract.boilerplate import trim_edges
from newscrawl.extract.dates import ParsedDate, date_from_url, find_dates, parse_date
from newscrawl.extract.selectors import compile_selector, validate_selectors
from newscrawl.extract.source import find_source
from newscrawl.extract.title import choose_title, same_headline, usable_title
from newscrawl.extract.zh import BYLINE_PATTERNS, author_from_lines, cjk_share, clean_author

logger = logging.getLogger(__name__)

__all__ = ["MAX_HTML_CHARS", "MIN_BODY_CHARS", "Article", "ExtractionError", "extract_article"]

# Only the first MAX_HTML_CHARS characters of a page are parsed: news articles sit well inside
# that, and it bounds the time spent on a huge page (timings in docs/design/extraction.md).
MAX_HTML_CHARS = 2_000_000
# A body with fewer non-space characters than this is not an article (video/list/error page).
MIN_BODY_CHARS = 40
# A page must contain an HTML tag near its start to be treated as HTML (not JSON, PDF, text).
_HTML_SNIFF_CHARS = 65_536
# The extraction library treats a page as HTML only when "html" is among its first 50 characters.
_LIBRARY_SNIFF = re.compile("html", re.I)
_LIBRARY_SNIFF_CHARS = 50
_HTML_TAG = re.compile(r"<(?:html|head|body|div|p|article|title|meta|section|span|table)\b", re.I)
# Text around the body searched for the date line and the byline.
_ZONE_BEFORE = 400
_ZONE_AFTER = 300
_BODY_EDGE = 200
_CST_SHARE = 0.3

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
_P_XPATH = etree.XPath("//body//p")
# Continuations of a split article body (see _continued).
_AD_NAME = re.compile(
    r"(?:^|[\s_-])(?:ads?|advert\w*|ad-?slot|ad-?container|dfp|gpt|promo\w*|sponsor\w*|embed\w*"
    r"|video|player|banner|outbrain|taboola|newsletter|inline-\w+)(?:$|[\s_-])",
    re.I,
)
_BETWEEN_MAX_CHARS = 200
_CONTINUATION_MIN_LINE = 20
_PROSE_LINE = 40  # a paragraph line is at least this long; link and name lists are shorter
_TIME_XPATH = etree.XPath("//body//time[@datetime][not(ancestor::a)]")
# A zone written next to a date or time: "UTC", "GMT", "UTC+8", "GMT-05:00", "北京时间".
_ZONE_WORD = re.compile(
    r"(?<![A-Za-z])(?:UTC|GMT)(?:\s*(?P<sign>[+\-−])\s*(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?)?(?![A-Za-z])"
    r"|(?P<cst>北京时间)"
)
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe")


class ExtractionError(Exception):
    """The extraction library failed on a page in an unexpected way (count it, keep crawling)."""


@dataclass(frozen=True, slots=True)
class Article:
    """One extracted article. ``text``: paragraphs separated by ``"\\n"``.

    ``published``: ISO 8601 date (``2024-03-15``) or datetime (``2024-03-15T10:20:00+08:00``),
    or None. ``source``: the outlet the page names as where its text comes from (``新华社``), None
    when it names none or only itself (:mod:`newscrawl.extract.source`).
    """

    title: str | None
    text: str
    published: str | None
    author: str | None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class _Strategy:
    """Knobs compared by benchmarks/bench_extraction.py; the defaults are what measured best."""

    meta_date: bool = True
    line_date: bool = True
    url_date: bool = True
    library_date: bool = True
    library_date_extensive: bool = False
    line_author: bool = True
    library_author: bool = True
    favor: str | None = "precision"  # None, "precision" or "recall"
    trim_edges: bool = True  # cut the boilerplate that ends a body (boilerplate.EDGE_PATTERNS)
    continuations: bool = True  # add the parts of a body split around an ad (see _continued)
    source: bool = True  # read the outlet the page names as its source (newscrawl.extract.source)


DEFAULT_STRATEGY = _Strategy()


_BULKY_OPEN = re.compile(r"<(script|style)\b([^>]*)>|<!--", re.I)


def _strip_bulky(html: str) -> str:
    """Remove scripts (except JSON-LD), styles and comments in one linear pass.

    An unterminated one runs to the end of the page, as in a browser.
    """
    out: list[str] = []
    pos = 0
    low = html.lower()
    while True:
        m = _BULKY_OPEN.search(html, pos)
        if m is None:
            out.append(html[pos:])
            break
        if m.group(1) is None:
            end_tag = "-->"
        else:
            end_tag = f"</{m.group(1).lower()}"
        end = low.find(end_tag, m.end())
        keep = m.group(1) is not None and "ld+json" in (m.group(2) or "").lower()
        if end < 0:
            stop = len(html)
        elif m.group(1) is None:
            stop = end + len(end_tag)
        else:
            close = html.find(">", end)
            stop = len(html) if close < 0 else close + 1
        out.append(html[pos : stop if keep else m.start()])
        if stop >= len(html):
            break
        pos = stop
    return "".join(out)


def _shrink(html: str, url: str) -> str:
    """A huge page: drop scripts (not JSON-LD), styles and comments, then keep the start."""
    size = len(html)
    html = _strip_bulky(html)
    if len(html) > MAX_HTML_CHARS:
        html = html[:MAX_HTML_CHARS]
    logger.debug("page %s: %d characters, parsing %d", url, size, len(html))
    return html


def _looks_like_html(html: str) -> bool:
    return _HTML_TAG.search(html, 0, _HTML_SNIFF_CHARS) is not None


def _parse(html: str) -> lxml.html.HtmlElement | None:
    try:
        return lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        logger.debug("unparseable page: %s", exc)
        return None


_VISIBLE_TEXT_XPATH = etree.XPath(
    "//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript"
    " or ancestor::template or ancestor::svg or ancestor::iframe)]",
    smart_strings=False,  # the texts only: no link back to each text's element
)


def _visible_text(tree: lxml.html.HtmlElement) -> str:
    """Visible text nodes of the page body, one per line."""
    nodes = _VISIBLE_TEXT_XPATH(tree)
    assert isinstance(nodes, list)
    return "\n".join(t for t in (str(n).strip() for n in nodes) if t)


def _select(tree: lxml.html.HtmlElement, selector: str, *, joiner: str) -> str | None:
    xp = compile_selector(selector)
    try:
        result = xp(tree)
    except etree.XPathEvalError as exc:
        logger.debug("selector %r failed: %s", selector, exc)
        return None
    if not isinstance(result, list):
        value = str(result).strip()
        return value or None
    texts: list[str] = []
    for node in result:
        if isinstance(node, str):
            t = node.strip()
        elif isinstance(node, lxml.html.HtmlElement):
            t = _element_text(node)
        else:
            t = ""
        if t:
            texts.append(t)
    return joiner.join(texts) or None


def _element_text(el: lxml.html.HtmlElement) -> str:
    """Text of an element, one line per block element, scripts and styles left out."""
    blocks = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section",
              "article", "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "figcaption"}
    out: list[str] = []

    def walk(node: etree._Element) -> None:
        if not isinstance(node.tag, str) or node.tag in _DROP_TAGS:
            return
        if node.tag in blocks:
            out.append("\n")
        if node.text:
            out.append(node.text)
        for child in node:
            walk(child)
            if child.tail:
                out.append(child.tail)
        if node.tag in blocks:
            out.append("\n")

    walk(el)
    raw_lines = "".join(out).split("\n")
    lines = (re.sub(r"[ \t\r\f\v\u3000\xa0]+", " ", line).strip() for line in raw_lines)
    return "\n".join(line for line in lines if line)


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


def _norm_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _between_parts(el: etree._Element) -> bool:
    """An element that may sit between two parts of one article: an ad, an embed, a caption, a
    short promo (named so, or short, and without a paragraph of its own)."""
    if not isinstance(el.tag, str):
        return True  # a comment
    if _AD_NAME.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
        return True
    text = _norm_line(el.text_content())
    return len(text) <= _BETWEEN_MAX_CHARS


def _continued(tree: lxml.html.HtmlElement, text: str) -> str:
    """``text`` with the paragraphs of its container's continuations.

    Some pages split one article into sibling containers of the same kind (two
    ``div.article-body``) around a full-width ad or embed; the library keeps one of them. A
    sibling with the container's tag and class, separated from it only by ad-like elements, is
    the same article: its lines are added before or after, in page order.
    """
    wanted = {_norm_line(ln) for ln in text.split("\n") if len(ln) >= _CONTINUATION_MIN_LINE}
    if len(wanted) < 2:
        return text
    found = [p for p in _P_XPATH(tree) if _norm_line(p.text_content()) in wanted]
    if len(found) < 2:
        return text
    first_ancestors = list(found[0].iterancestors())
    last_ancestors = set(found[-1].iterancestors())
    container = next((a for a in first_ancestors if a in last_ancestors), None)
    if container is None or container.tag in ("body", "html"):
        return text
    parent = container.getparent()
    if parent is None:
        return text
    if not (container.get("class") or "").strip():
        return text  # a bare <div>/<td> of a table layout: its siblings are anything
    signature = (container.tag, container.get("class"))
    siblings = list(parent)
    at = siblings.index(container)
    known = set(wanted)

    def gather(order: list[etree._Element]) -> list[str]:
        out: list[str] = []
        for sib in order:
            if isinstance(sib.tag, str) and (sib.tag, sib.get("class")) == signature:
                lines = [ln for ln in _element_text(sib).split("\n")
                         if _norm_line(ln) not in known]
                prose = sum(len(ln) for ln in lines if len(ln) >= _PROSE_LINE)
                if prose * 2 < sum(len(ln) for ln in lines):
                    break  # a list of links or names, not the article's paragraphs
                out.extend(lines)
            elif not _between_parts(sib):
                break
        return out

    after = gather(siblings[at + 1 :])
    before = list(reversed(gather(list(reversed(siblings[:at])))))
    if sum(len(ln) for ln in before + after) < MIN_BODY_CHARS:
        return text
    return "\n".join([*before, text, *after])


def _meta_date(tree: lxml.html.HtmlElement) -> ParsedDate | None:
    for value in _META_DATE_XPATH(tree):
        parsed = parse_date(str(value))
        if parsed is not None:
            return parsed
    for script in _JSONLD_XPATH(tree):
        parsed = parse_date(_jsonld_date(str(script)))
        if parsed is not None:
            return parsed
    return None


def _time_texts(tree: lxml.html.HtmlElement) -> str:
    """The visible text of the page's ``<time>`` elements (where a zone is often printed)."""
    return " ".join(str(el.text_content()) for el in _TIME_XPATH(tree))


def _time_element_date(tree: lxml.html.HtmlElement) -> ParsedDate | None:
    """The first ``<time datetime>`` of the page that is not in a link (a list of other
    articles): how many pages print their own date."""
    for el in _TIME_XPATH(tree):
        parsed = parse_date(el.get("datetime"))
        if parsed is not None:
            return parsed
    return None


def _stated_zone(texts: list[str]) -> timezone | None:
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


_TABLE_RULE = re.compile(r"^[|\-:\s]+$")


def _plain_lines(text: str) -> str:
    """Plain text, one paragraph a line: the library prints tables as ``| a | b |`` rows."""
    out: list[str] = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith("|") and line.endswith("|"):
            if _TABLE_RULE.match(line):
                continue
            line = " ".join(cell.strip() for cell in line.strip("|").split(" | ") if cell.strip())
        if line:
            out.append(line)
    return "\n".join(out)


def _below_title(page_text: str, title: str | None) -> str:
    """Page text just below the first visible occurrence of the title (where date lines live)."""
    if not title:
        return ""
    pos = page_text.find(title[:12].strip())
    if pos < 0:
        return ""
    return page_text[pos + len(title) : pos + len(title) + _ZONE_BEFORE]


def _above_body(zone: str, body: str) -> str:
    """``zone`` up to where the body's first line starts in it (all of it when it does not)."""
    first = body.split("\n", 1)[0].strip()[:12]
    pos = zone.find(first) if first else -1
    return zone[:pos] if pos >= 0 else zone


_SQUEEZE_RUN = re.compile(r"[^\s|]+")
_SQUEEZABLE = re.compile(r"[\s|]+")


def _squeeze(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` without whitespace and ``|``, with where each kept run starts in the squeezed text
    and in ``text`` (see ``_raw_index``)."""
    runs = _SQUEEZE_RUN.findall(text)
    raw_starts = [m.start() for m in _SQUEEZE_RUN.finditer(text)]
    starts: list[int] = []
    at = 0
    for run in runs:
        starts.append(at)
        at += len(run)
    return "".join(runs), starts, raw_starts


def _raw_index(pos: int, starts: list[int], raw_starts: list[int]) -> int:
    """The index in the original text of the squeezed text's character ``pos``."""
    run = bisect.bisect_right(starts, pos) - 1
    return raw_starts[run] + pos - starts[run]


def _zones(page_text: str, title: str | None, body: str) -> tuple[str, str]:
    """Text just before the body (below the title) and just after it, in the visible page text.

    The body is located by its first and last lines with whitespace ignored (the library and the
    page text space things differently).
    """
    lines = [ln for ln in (_SQUEEZABLE.sub("", ln) for ln in body.split("\n")) if len(ln) >= 6]
    if not lines:
        return "", ""
    squeezed, starts, raw_starts = _squeeze(page_text)
    first, last = lines[0][:16], lines[-1][-16:]
    start = -1
    headline = _SQUEEZABLE.sub("", title) if title else ""
    if headline and len(lines[0]) > len(headline) and lines[0].startswith(headline):
        # the headline runs into the body's first line: where the page prints the headline
        # alone is not where the body starts
        start = squeezed.find(lines[0][: len(headline) + 16])
    if start < 0:
        start = squeezed.find(first)
    if start < 0:
        return "", ""
    end = squeezed.find(last, start)
    end = end + len(last) if end >= 0 else start + len(first)
    start_raw = _raw_index(start, starts, raw_starts)
    end_raw = _raw_index(end - 1, starts, raw_starts) + 1
    lo = max(0, start_raw - _ZONE_BEFORE)
    if title:
        t = page_text.rfind(title[:12].strip(), lo, start_raw)
        if t >= 0:
            lo = t
    return page_text[lo:start_raw], page_text[end_raw : end_raw + _ZONE_AFTER]


def _clean_author(value: str | None) -> str | None:
    if not value:
        return None
    low = value.strip().lower()
    if "www" in low or ".com" in low or ".cn" in low or len(value) > 60 or "■" in value:
        return None
    return clean_author(value)


def _chars(text: str) -> int:
    """Characters of ``text`` that are not white space (as ``str.isspace`` says)."""
    return len("".join(text.split()))


def _as_document(html: str) -> str:
    """The page as the library accepts it: it rejects a page whose first 50 characters do not say
    ``html`` and whose root element has fewer than two children (a bare ``<div>`` fragment, as
    some portals serve their article pages), so such a page gets an ``<html>`` start tag. The
    parser then puts head elements in the head and the rest in the body, as a browser does.
    """
    if _LIBRARY_SNIFF.search(html, 0, _LIBRARY_SNIFF_CHARS):
        return html
    return "<html>" + html


def _library_tree(html: str, url: str) -> lxml.html.HtmlElement | None:
    """The tree the extraction library makes of the page (None: not HTML to it)."""
    try:
        return load_html(_as_document(html))
    except Exception as exc:  # the library's failure modes are not enumerable
        raise ExtractionError(f"trafilatura failed on {url}: {exc!r}") from exc


def _library(tree: lxml.html.HtmlElement, url: str, strategy: _Strategy) -> object | None:
    """The extraction library's document (its text), or None when it finds no body.

    Its metadata (title, date, author) is read apart, by :class:`_LibraryMetadata`, and only
    when our own rules found nothing: it costs about a third of the library's time.
    """
    try:
        return trafilatura.bare_extraction(
            tree,
            url=url or None,
            with_metadata=False,
            include_comments=False,
            include_tables=True,
            favor_precision=strategy.favor == "precision",
            favor_recall=strategy.favor == "recall",
        )
    except Exception as exc:  # the library's failure modes are not enumerable
        raise ExtractionError(f"trafilatura failed on {url}: {exc!r}") from exc


class _LibraryMetadata:
    """The library's title, date and author of a page, read the first time one is asked for.

    The same call as the library's own with ``with_metadata=True`` (``bare_extraction`` reads the
    metadata of the page's tree before its body, with these arguments), on a copy of the tree.
    """

    def __init__(self, tree: lxml.html.HtmlElement | None, url: str, strategy: _Strategy) -> None:
        self._tree = tree
        self._url = url
        self._strategy = strategy
        self._document: object | None = None

    def _read(self, field: str) -> str | None:
        if self._tree is None:
            return None
        if self._document is None:
            try:
                self._document = extract_metadata(
                    copy.deepcopy(self._tree),
                    self._url or None,
                    {"original_date": True,
                     "extensive_search": self._strategy.library_date_extensive},
                    False,  # bare_extraction passes its ``fast`` option here
                    set(),
                )
            except Exception as exc:  # the library's failure modes are not enumerable
                raise ExtractionError(f"trafilatura failed on {self._url}: {exc!r}") from exc
        value = getattr(self._document, field, None)
        return str(value) if value else None

    def title(self) -> str | None:
        return self._read("title")

    def date(self) -> ParsedDate | None:
        return parse_date(self._read("date"))

    def author(self) -> str | None:
        return self._read("author")


def _extract(
    html: str,
    url: str,
    selectors: Mapping[str, str] | None,
    strategy: _Strategy,
) -> Article | None:
    if not isinstance(html, str):
        raise TypeError(f"html must be str, not {type(html).__name__}")
    validate_selectors(selectors)
    if len(html) > MAX_HTML_CHARS:
        html = _shrink(html, url)
    html = html.replace("\x00", "")
    if not html.strip() or not _looks_like_html(html):
        return None
    library_tree = _library_tree(html, url)
    # One parse for the library and our own rules when the library's tree is the whole document
    # (it copies a tree it is given). lxml turns a page that does not start with <html> or a
    # doctype into a fragment, its <body> renamed: our rules then read a document of their own.
    shared = library_tree is not None and library_tree.tag == "html"
    tree = library_tree if shared else _parse(html)
    if tree is None:
        return None

    doc = _library(library_tree, url, strategy) if library_tree is not None else None
    text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
    library = _LibraryMetadata(library_tree if doc is not None else None, url, strategy)
    sel = selectors or {}
    if "text" in sel:
        text = _select(tree, sel["text"], joiner="\n") or ""
    text = _plain_lines(text)
    if "text" not in sel and text and strategy.continuations:
        text = _continued(tree, text)
    title = usable_title(_select(tree, sel["title"], joiner=" ")) if "title" in sel else None
    if not title:
        title = choose_title(tree, text) or usable_title(library.title())
    if title:
        title = re.sub(r"\s+", " ", title).strip() or None
    if title and "text" not in sel and same_headline(text.split("\n", 1)[0], title):
        text = text.split("\n", 1)[1] if "\n" in text else ""  # the headline is the title
    if _chars(text) < MIN_BODY_CHARS:
        return None

    page_text = _visible_text(tree)
    before, after = _zones(page_text, title, text)
    assume_cst = cjk_share(text) >= _CST_SHARE

    published: ParsedDate | None = None
    if "published" in sel:
        published = parse_date(_select(tree, sel["published"], joiner=" "))
    if published is None and strategy.meta_date:
        published = _meta_date(tree)
    below = _below_title(page_text, title)
    if published is None and strategy.line_date:
        # the page's own date line, above the body: before a date written in the body's text
        found = find_dates(before) or find_dates(_above_body(below, text))
        if found:
            published = found[0][1]
    if published is None and strategy.url_date:
        published = date_from_url(url)
    if published is None and strategy.meta_date:
        published = _time_element_date(tree)
    if published is None and strategy.line_date:
        found = find_dates(text[:_BODY_EDGE])
        if found:
            published = found[0][1]
    if published is None and strategy.library_date:
        published = library.date()
    if published is not None and published.time is not None and published.tz is None:
        zone = _stated_zone([before, _above_body(below, text), _time_texts(tree)])
        if zone is not None:
            published = replace(published, tz=zone)

    author: str | None = None
    if "author" in sel:
        author = _select(tree, sel["author"], joiner=" ")
    def byline(patterns: int | None) -> str | None:
        return author_from_lines(before=before or below, head=text[:_BODY_EDGE],
                                 tail=text[-_BODY_EDGE:], after=after, patterns=patterns)

    if author is None and strategy.line_author:
        # a writer's byline printed with the article (作者：, 记者 X) beats page metadata, which
        # often names the uploading account or the editor
        author = byline(BYLINE_PATTERNS)
    if author is None and strategy.library_author:
        author = _clean_author(library.author())
    if author is None and strategy.line_author:
        author = byline(None)

    source = None
    if strategy.source:
        # before the edge trim: a "来源：" line may end the body
        source = find_source(tree, url, before=before or below, head=text[:_BODY_EDGE],
                             tail=text[-_BODY_EDGE:], after=after, page_text=page_text)

    if strategy.trim_edges and "text" not in sel:
        # after the author and date passes: a byline may sit among the lines cut here
        text, cut = trim_edges(text, keep_chars=MIN_BODY_CHARS)
        if cut:
            logger.debug("page %s: cut %s at the end of the body", url, ", ".join(cut))

    return Article(
        title=title,
        text=text,
        published=published.iso(assume_cst=assume_cst) if published else None,
        author=author,
        source=source,
    )


def extract_article(
    html: str,
    url: str,
    *,
    selectors: Mapping[str, str] | None = None,
) -> Article | None:
    """Extract the article from a decoded page; None when the page has no article body.

    ``selectors`` are per-site overrides (keys ``title``, ``text``, ``published``, ``author``; XPath
    when the value starts with ``/`` or ``(``, CSS otherwise); an override wins for its field.
    Raises ValueError for invalid selectors (check them at start-up with ``validate_selectors``),
    TypeError when ``html`` is not ``str`` and ExtractionError when the extraction library fails.
    """
    return _extract(html, url, selectors, DEFAULT_STRATEGY)
