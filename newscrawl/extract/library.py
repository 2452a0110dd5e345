"""The extraction library's calls: its tree of the page, its body text, and its metadata (title,
date, author) read only when our own rules found nothing; its author search alone when only the
author is asked for, skipped on a page where none of its author paths can match.

See docs/design/extraction.md.
"""

from __future__ import annotations

import copy
import logging
import re

import lxml.html
import trafilatura
from lxml import etree
from trafilatura.metadata import examine_meta, extract_author, extract_meta_json, extract_metadata
from trafilatura.utils import load_html

from newscrawl.errors import NewscrawlError
from newscrawl.extract.dates import ParsedDate, parse_date

logger = logging.getLogger(__name__)

__all__ = ["ExtractionError", "LibraryMetadata", "library_author", "library_body", "library_tree"]

# The extraction library treats a page as HTML only when "html" is among its first 50 characters.
_LIBRARY_SNIFF = re.compile("html", re.I)
_LIBRARY_SNIFF_CHARS = 50


class ExtractionError(NewscrawlError):
    """The extraction library failed on a page in an unexpected way (count it, keep crawling)."""



def _as_document(html: str) -> str:
    """The page as the library accepts it: it rejects a page whose first 50 characters do not say
    ``html`` and whose root element has fewer than two children (a bare ``<div>`` fragment, as
    some portals serve their article pages), so such a page gets an ``<html>`` start tag. The
    parser then puts head elements in the head and the rest in the body, as a browser does.
    """
    if _LIBRARY_SNIFF.search(html, 0, _LIBRARY_SNIFF_CHARS):
        return html
    return "<html>" + html


def library_tree(html: str, url: str) -> lxml.html.HtmlElement | None:
    """The tree the extraction library makes of the page (None: not HTML to it)."""
    try:
        return load_html(_as_document(html))
    except Exception as exc:  # the library's failure modes are not enumerable
        raise ExtractionError(f"trafilatura failed on {url}: {exc!r}") from exc


def library_body(tree: lxml.html.HtmlElement, url: str, favor: str | None) -> object | None:
    """The extraction library's document (its text), or None when it finds no body.

    Its metadata (title, date, author) is read apart, by :class:`LibraryMetadata`, and only
    when our own rules found nothing: it costs about a third of the library's time.
    """
    try:
        return trafilatura.bare_extraction(
            tree,
            url=url or None,
            with_metadata=False,
            include_comments=False,
            include_tables=True,
            favor_precision=favor == "precision",
            favor_recall=favor == "recall",
        )
    except Exception as exc:  # the library's failure modes are not enumerable
        raise ExtractionError(f"trafilatura failed on {url}: {exc!r}") from exc


# What the library's author paths (trafilatura.xpaths.AUTHOR_XPATHS) test: these attributes, an
# <author> element, an element with a <rel> child. A page where no value of them holds one of the
# words below (any case) has no element those paths select, in its tree or in any pruned copy.
_AUTHOR_ATTRIBUTES = etree.XPath(
    "//@class|//@id|//@rel|//@itemprop|//@data-testid|//@data-component", smart_strings=False)
_AUTHOR_ELEMENTS = etree.XPath("boolean(//author|//rel)")
_AUTHOR_WORDS = re.compile(
    "author|byl|bbl|username|screenname|writer|channel-name|zuozhe|bianji|xiaobian|submitted-by"
    "|posted-by|journalist-name", re.I)


def _may_name_author(tree: lxml.html.HtmlElement) -> bool:
    """Whether the library's author paths can select an element of ``tree``."""
    if _AUTHOR_ELEMENTS(tree):
        return True
    values = _AUTHOR_ATTRIBUTES(tree)
    return isinstance(values, list) and bool(_AUTHOR_WORDS.search("\n".join(map(str, values))))


def library_author(tree: lxml.html.HtmlElement) -> str | None:
    """The author the library's metadata pass gives the page: its author ``<meta>`` (a name of
    two words or more), then its JSON-LD, then its author paths over the page, the same steps
    as ``extract_metadata`` without the title, date, site name and tag searches. Leaves ``tree``
    as it is."""
    metadata = examine_meta(tree)
    if metadata.author and " " not in metadata.author:
        metadata.author = None
    try:
        metadata = extract_meta_json(tree, metadata)
    except Exception as exc:  # as the library's own pass: its JSON-LD reader has bugs
        logger.debug("JSON-LD metadata not read: %s", exc)
    if metadata.author:
        return str(metadata.author)
    return extract_author(tree) if _may_name_author(tree) else None


class LibraryMetadata:
    """The library's title, date and author of a page, read the first time one is asked for.

    The same call as the library's own with ``with_metadata=True`` (``bare_extraction`` reads the
    metadata of the page's tree before its body, with these arguments), on a copy of the tree.
    """

    def __init__(self, tree: lxml.html.HtmlElement | None, url: str, extensive: bool) -> None:
        self._tree = tree
        self._url = url
        self._extensive = extensive
        self._document: object | None = None
        self._author: tuple[str | None] | None = None

    def _read(self, field: str) -> str | None:
        if self._tree is None:
            return None
        if self._document is None:
            try:
                self._document = extract_metadata(
                    copy.deepcopy(self._tree),
                    self._url or None,
                    {"original_date": True,
                     "extensive_search": self._extensive},
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
        """The library's author: from its whole metadata pass when that ran already, otherwise
        from :func:`library_author`, which gives the same."""
        if self._document is not None or self._tree is None:
            return self._read("author")
        if self._author is None:
            try:
                self._author = (library_author(self._tree),)
            except Exception as exc:  # the library's failure modes are not enumerable
                raise ExtractionError(f"trafilatura failed on {self._url}: {exc!r}") from exc
        return self._author[0] or None

