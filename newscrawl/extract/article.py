"""Article extraction: trafilatura for the body, the page's agreed title, metadata and date lines.

See docs/design/extraction.md for the measurements behind each choice.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from newscrawl.extract.boilerplate import is_sign_off_line, leading_info, trim_edges
from newscrawl.extract.continuation import continued, outside_tail
from newscrawl.extract.dates import ParsedDate, date_from_url, find_dates, parse_date
from newscrawl.extract.library import ExtractionError, LibraryMetadata, library_body, library_tree
from newscrawl.extract.page import (
    MAX_HTML_CHARS,
    looks_like_html,
    parse,
    plain_lines,
    select,
    shrink,
)
from newscrawl.extract.page_dates import meta_date, stated_zone, time_element_date, time_texts
from newscrawl.extract.selectors import validate_selectors
from newscrawl.extract.source import find_source
from newscrawl.extract.title import choose_title, same_headline, usable_title
from newscrawl.extract.zh import BYLINE_PATTERNS, author_from_lines, cjk_share, clean_author
from newscrawl.extract.zones import above_body, below_title, visible_text, zones

logger = logging.getLogger(__name__)

__all__ = ["MAX_HTML_CHARS", "MIN_BODY_CHARS", "Article", "ExtractionError", "extract_article"]

# A body with fewer non-space characters than this is not an article (video/list/error page).
MIN_BODY_CHARS = 40
# Text around the body searched for the date line and the byline.
_BODY_EDGE = 200
_CST_SHARE = 0.3


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
    """Knobs of the extraction; the defaults are what measured best (docs/design/extraction.md)."""

    meta_date: bool = True
    line_date: bool = True
    url_date: bool = True
    library_date: bool = True
    library_date_extensive: bool = False
    line_author: bool = True
    library_author: bool = True
    favor: str | None = "precision"  # None, "precision" or "recall"
    trim_edges: bool = True  # cut the boilerplate that ends a body (boilerplate.EDGE_PATTERNS)
    continuations: bool = True  # add the parts of a body split around an ad (continuation.py)
    source: bool = True  # read the outlet the page names as its source (newscrawl.extract.source)


DEFAULT_STRATEGY = _Strategy()


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
        html = shrink(html, url)
    html = html.replace("\x00", "")
    if not html.strip() or not looks_like_html(html):
        return None
    lib_tree = library_tree(html, url)
    # One parse for the library and our own rules when the library's tree is the whole document
    # (it copies a tree it is given). lxml turns a page that does not start with <html> or a
    # doctype into a fragment, its <body> renamed: our rules then read a document of their own.
    shared = lib_tree is not None and lib_tree.tag == "html"
    tree = lib_tree if shared else parse(html)
    if tree is None:
        return None

    doc = library_body(lib_tree, url, strategy.favor) if lib_tree is not None else None
    text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
    library = LibraryMetadata(lib_tree if doc is not None else None, url,
                              strategy.library_date_extensive)
    sel = selectors or {}
    if "text" in sel:
        text = select(tree, sel["text"], joiner="\n") or ""
    text = plain_lines(text)
    if "text" not in sel and text and strategy.continuations:
        text = continued(tree, text, MIN_BODY_CHARS)
    title = usable_title(select(tree, sel["title"], joiner=" ")) if "title" in sel else None
    if not title:
        title = choose_title(tree, text) or usable_title(library.title())
    if title:
        title = re.sub(r"\s+", " ", title).strip() or None
    if title and "text" not in sel and same_headline(text.split("\n", 1)[0], title):
        text = text.split("\n", 1)[1] if "\n" in text else ""  # the headline is the title
    if _chars(text) < MIN_BODY_CHARS:
        return None

    page_text = visible_text(tree)
    before, after = zones(page_text, title, text)
    chinese = cjk_share(text) >= _CST_SHARE

    published: ParsedDate | None = None
    if "published" in sel:
        published = parse_date(select(tree, sel["published"], joiner=" "))
    if published is None and strategy.meta_date:
        published = meta_date(tree)
    below = below_title(page_text, title)
    if published is None and strategy.line_date:
        # the page's own date line, above the body: before a date written in the body's text
        # or that line kept as the body's first (leading_info): before a date in the URL
        found = (find_dates(before) or find_dates(above_body(below, text))
                 or find_dates(leading_info(text)))
        if found:
            published = found[0][1]
    if published is None and strategy.url_date:
        published = date_from_url(url)
    if published is None and strategy.meta_date:
        published = time_element_date(tree)
    if published is None and strategy.line_date:
        found = find_dates(text[:_BODY_EDGE])
        if found:
            published = found[0][1]
    if published is None and strategy.library_date:
        published = library.date()
    if published is not None and published.time is not None and published.tz is None:
        zone = stated_zone([before, above_body(below, text), time_texts(tree)])
        if zone is not None:
            published = replace(published, tz=zone)

    author: str | None = None
    if "author" in sel:
        author = select(tree, sel["author"], joiner=" ")

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
        inside = outside_tail(tree, text, is_sign_off_line)
        if inside != text and _chars(inside) >= MIN_BODY_CHARS:
            logger.debug("page %s: cut the labelled line after the body's container", url)
            text = inside
        text, cut = trim_edges(text, keep_chars=MIN_BODY_CHARS, above=before)
        if cut:
            logger.debug("page %s: cut %s at the end of the body", url, ", ".join(cut))

    return Article(
        title=title,
        text=text,
        published=published.iso(assume_cst=chinese) if published else None,
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
