"""The page text around an article body: the zone between the title and the body and the zone
just below the body, where date lines, bylines and source lines are printed.

See docs/design/extraction.md.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re

import lxml.html
from lxml import etree

__all__ = ["above_body", "below_title", "visible_text", "zones"]

# Text around the body searched for the date line and the byline.
ZONE_BEFORE = 400
ZONE_AFTER = 300

_VISIBLE_TEXT_XPATH = etree.XPath(
    "//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript"
    " or ancestor::template or ancestor::svg or ancestor::iframe)]",
    smart_strings=False,  # the texts only: no link back to each text's element
)


def visible_text(tree: lxml.html.HtmlElement) -> str:
    """Visible text nodes of the page body, one per line."""
    nodes = _VISIBLE_TEXT_XPATH(tree)
    assert isinstance(nodes, list)
    return "\n".join([t for n in nodes if (t := n.strip())])



def below_title(page_text: str, title: str | None) -> str:
    """Page text just below the first visible occurrence of the title (where date lines live)."""
    if not title:
        return ""
    pos = page_text.find(title[:12].strip())
    if pos < 0:
        return ""
    return page_text[pos + len(title) : pos + len(title) + ZONE_BEFORE]


def above_body(zone: str, body: str) -> str:
    """``zone`` up to where the body's first line starts in it (all of it when it does not)."""
    first = body.split("\n", 1)[0].strip()[:12]
    pos = zone.find(first) if first else -1
    return zone[:pos] if pos >= 0 else zone


_SQUEEZABLE = re.compile(r"[\s|]+")


def _squeeze(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` without whitespace and ``|``, with where each kept run starts in the squeezed text
    and in ``text`` (see ``_raw_index``; a run may be empty at either end)."""
    runs = _SQUEEZABLE.split(text)
    gaps = map(len, _SQUEEZABLE.findall(text))
    lengths = list(map(len, runs))
    starts = list(itertools.accumulate(lengths, initial=0))
    raw_starts = list(itertools.accumulate(map(operator.add, lengths, gaps), initial=0))
    return "".join(runs), starts, raw_starts


def _raw_index(pos: int, starts: list[int], raw_starts: list[int]) -> int:
    """The index in the original text of the squeezed text's character ``pos``."""
    run = bisect.bisect_right(starts, pos) - 1
    return raw_starts[run] + pos - starts[run]


def zones(page_text: str, title: str | None, body: str) -> tuple[str, str]:
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
    lo = max(0, start_raw - ZONE_BEFORE)
    if title:
        t = page_text.rfind(title[:12].strip(), lo, start_raw)
        if t >= 0:
            lo = t
    return page_text[lo:start_raw], page_text[end_raw : end_raw + ZONE_AFTER]

