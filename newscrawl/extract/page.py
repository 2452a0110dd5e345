"""A page's HTML before extraction: the sniff, a page cut short, the cut of a huge page, the
parse, the text of a per-site selector and of an element, the library's table rows as plain
lines.

See docs/design/extraction.md.
"""

from __future__ import annotations

import logging
import re

import lxml.html
from lxml import etree

from newscrawl.extract.selectors import compile_selector

logger = logging.getLogger(__name__)

__all__ = ["MAX_HTML_CHARS", "cut_short", "element_text", "looks_like_html", "parse", "plain_lines",
           "select", "shrink"]

# Only the first MAX_HTML_CHARS characters of a page are parsed: news articles sit well inside
# that, and it bounds the time spent on a huge page (timings in docs/design/extraction.md).
MAX_HTML_CHARS = 2_000_000
# A body with fewer non-space characters than this is not an article (video/list/error page).
# A page must contain an HTML tag near its start to be treated as HTML (not JSON, PDF, text).
_HTML_SNIFF_CHARS = 65_536
_HTML_TAG = re.compile(r"<(?:html|head|body|div|p|article|title|meta|section|span|table)\b", re.I)
_OPENED = re.compile(rb"<(?:html|body)[\s>]", re.I)
_CLOSED = re.compile(rb"</(?:html|body)\b", re.I)  # a template's "</html" without ">" too
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe")
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


def shrink(html: str, url: str) -> str:
    """A huge page: drop scripts (not JSON-LD), styles and comments, then keep the start."""
    size = len(html)
    html = _strip_bulky(html)
    if len(html) > MAX_HTML_CHARS:
        html = html[:MAX_HTML_CHARS]
    logger.debug("page %s: %d characters, parsing %d", url, size, len(html))
    return html


def cut_short(body: bytes) -> bool:
    """Whether a page's bytes end before the page does: it opens ``<html>`` or ``<body>`` near
    its start, closes neither, and its last byte (trailing white space aside) is not the end of
    a tag. A complete page closes its body or at least ends at a tag; a page cut off (a server
    or proxy that stopped writing with a Content-Length to match) stops anywhere, often inside
    a character, and its extraction would store part of the article for good."""
    end = body.rstrip()
    if not end or end.endswith(b">"):
        return False
    return _OPENED.search(body, 0, _HTML_SNIFF_CHARS) is not None and _CLOSED.search(body) is None


def looks_like_html(html: str) -> bool:
    return _HTML_TAG.search(html, 0, _HTML_SNIFF_CHARS) is not None


def parse(html: str) -> lxml.html.HtmlElement | None:
    try:
        return lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        logger.debug("unparseable page: %s", exc)
        return None



def select(tree: lxml.html.HtmlElement, selector: str, *, joiner: str) -> str | None:
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
            t = element_text(node)
        else:
            t = ""
        if t:
            texts.append(t)
    return joiner.join(texts) or None


def element_text(el: lxml.html.HtmlElement) -> str:
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



_TABLE_RULE = re.compile(r"^[|\-:\s]+$")


def plain_lines(text: str) -> str:
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

