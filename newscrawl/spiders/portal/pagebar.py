"""Which of a page's list links a walk follows: a numbered pagination bar is a sequence, and
only its next page is followed (the rest is asked for page by page as the walk goes on).

Pure functions of the links' URLs, anchor texts and ``rel``: no Scrapy, no Redis.
Design: docs/design/pagination.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

#: anchor texts of a "next page" link (compared lowercased, spaces removed)
NEXT_TEXTS = frozenset({"下一页", "下页", "后页", "下一頁", "下頁", "next", "nextpage", "next>",
                        "next»", "next›", "older", ">", "›"})
#: anchor texts of the other pagination controls (not followed: the sequence reaches the pages)
CONTROL_TEXTS = frozenset({"上一页", "上页", "前页", "上一頁", "首页", "首頁", "第一页", "末页",
                           "尾页", "末頁", "尾頁", "最后一页", "最末页", "prev", "previous",
                           "<prev", "«prev", "newer", "first", "last", "<", "‹", "<<", "«",
                           ">>", "»"})
_NUMBER = re.compile(r"^[\[(（【]?(?:第)?(\d{1,6})(?:页|頁)?[\])）】]?$")


@dataclass(frozen=True)
class ListLink:
    """One list link of a page: its URL, anchor text and ``rel`` attribute."""

    url: str
    text: str = ""
    rel: str = ""


@dataclass
class Plan:
    """What to follow: ``follow`` (URLs, page order), the bar numbers of the followed numbered
    links (``numbers``), the page after the followed next page in the bar (``after``: its URL and
    number, to go on with should the next page fail), and how many list links were left for the
    sequence (``withheld``)."""

    follow: list[str] = field(default_factory=list)
    numbers: dict[str, int] = field(default_factory=dict)
    after: dict[str, tuple[str, int]] = field(default_factory=dict)
    withheld: int = 0


def _squeeze(text: str) -> str:
    return "".join(text.split()).lower()


def page_number(text: str) -> int | None:
    """The page number an anchor text shows (``2``, ``[2]``, ``第2页``), else None."""
    match = _NUMBER.match(_squeeze(text))
    return int(match.group(1)) if match else None


def is_next(link: ListLink) -> bool:
    return "next" in link.rel.lower().split() or _squeeze(link.text) in NEXT_TEXTS


def is_control(link: ListLink) -> bool:
    rel = link.rel.lower().split()
    return "prev" in rel or "first" in rel or "last" in rel or _squeeze(link.text) in CONTROL_TEXTS


def plan(links: Iterable[ListLink], current_url: str, current_number: int | None = None,
         next_urls: Iterable[str] = ()) -> Plan:
    """The list links a page's walk follows. A list link is of one of three sorts, told apart
    by its anchor text and ``rel``:

    * **numbered** -- the text is a page number (``2``, ``[3]``, ``第4页``): the pages of one bar,
      a sequence of which only the *next* one is followed: the smallest number above the current
      page's (its own link in the bar, or the number it was reached by), or the smallest of all
      on a page that is not in the bar (a start page);
    * **next** -- ``rel="next"`` (on the link or a ``<link>`` in the head) or the text "下一页",
      "下页", "next", ">"...: followed;
    * **controls** -- "上一页", "首页", "末页", "prev", "last", "<<"...: not followed (the
      sequence reaches those pages).

    Every other list link (a section, a link whose text is its URL) is followed.
    ``current_number`` is the bar number the page was reached by (None: unknown); ``next_urls``
    are ``<link rel="next">`` targets from the page's head."""
    links = list(links)
    next_urls = list(next_urls)
    hinted = set(next_urls)
    numbered: dict[str, int] = {}
    for link in links:
        number = page_number(link.text)
        if number is None or is_next(link) or is_control(link):
            continue
        if link.url == current_url:
            current_number = number  # the bar names the page itself
        else:
            numbered.setdefault(link.url, number)
    later = sorted((n, url) for url, n in numbered.items()
                   if current_number is None or n > current_number)
    next_numbered = later[0][1] if later else None
    out = Plan()
    for link in links:
        url = link.url
        if url in out.follow or url == current_url:
            continue
        if url == next_numbered or url in hinted or is_next(link):
            out.follow.append(url)
        elif url in numbered or is_control(link):
            continue
        else:
            out.follow.append(url)
        if url in numbered:
            out.numbers[url] = numbered[url]
    following = [(n, url) for n, url in later[1:] if n > later[0][0]] if later else []
    if next_numbered is not None and following:
        out.after[next_numbered] = (following[0][1], following[0][0])
    for url in next_urls:  # a <link rel="next"> the page has no anchor for
        if url not in out.follow and url != current_url:
            out.follow.append(url)
    out.withheld = len({link.url for link in links} - set(out.follow) - {current_url})
    return out


def looks_like_list(link: ListLink) -> bool:
    """Whether a link's text or ``rel`` says it is the next page of a listing: "下一页", "next",
    page number 2 (for the warning about a ``follow_url`` that matches none of them; not
    "更多", which on a home page often leads to sections the site's other start pages cover)."""
    return is_next(link) or page_number(link.text) == 2
