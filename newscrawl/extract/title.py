"""Choose an article's title from the candidates a page offers: the one they agree on.

A page names its article in several places: ``<title>`` (usually with the portal's channel and
name appended: ``投身外交(3)_读书频道_新浪网``, ``Title - BBC News``; sometimes prepended:
``多维博客 » Title``), ``og:title``/``twitter:title``, ``<meta name="title">``-like tags, a JSON-LD
``headline``, the ``<h1>``, and the heading printed just above the article body. Any one of them can
be wrong (an ``<h1>`` holding the site logo, a ``<title>`` holding only the site name, an og:title
cut short), but they rarely agree on a wrong text.

Each source votes once for a text (compared without spaces, quotes, case or width differences):

- a title-like source (``<title>``, og/twitter/meta titles, JSON-LD ``headline``) is split at its
  separators (``_``, ``|``, ``»``, ``::``, ``--``, a spaced dash, a dash touching a CJK character);
  leading and trailing parts that look like a site or channel name (equal to ``og:site_name`` or
  the like, or short and ending like a portal name: ``网``, ``频道``, ``新闻``, ``News``...) are cut
  off, and it votes for what remains and for each run of its parts;
- each ``<h1>`` votes for its text;
- the heading-like line (h1-h3, bold, a ``title`` class; not a link, a date line or a
  ``来源：`` value) closest above the body's first paragraph votes for its text;
- a candidate printed on the page as a line of its own gets a quarter vote, three quarters more
  when that line is among the ten lines just above the body;
- the widest part of a title whose other parts are all short (``Headline | Money | The Guardian``,
  ``Headline - CNN``) gets a tenth of a vote: short parts around a long one are names.

A site or channel name (a part cut off a title, ``og:site_name``, a short text ending like a portal
name) loses to any other candidate. The most votes win; among equals a text the page declares
beats the layout guess, then the wider text (a channel name is shorter than a headline).

Imports no scrapy.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import lxml.html
from lxml import etree

__all__ = ["choose_title", "part_bounds", "same_headline", "site_name_metas", "usable_title"]

# Weights of the sources. A text on the page is weak evidence (menus and link lists are text too).
_W_TITLE = 1.0
_W_META = 1.0
_W_HEADING = 1.0
_W_LEAD = 1.0  # the heading closest above the body
_W_NEAR = 0.75  # a line of its own among the lines just above the body
_W_VISIBLE = 0.25  # a line of its own anywhere on the page (menus and link lists are lines too)
_W_BARE = 0.1  # "Headline | Money | The Guardian": short parts around a long one are names
_W_SITE_PENALTY = 10.0  # a site or channel name wins only when nothing else is offered

_MAX_TITLE_CHARS = 300
_MIN_KEY_CHARS = 1
_TRAILING_JUNK = re.compile(r"(?:\s*[-_|»·]+)+$")
_LEAD_LINES = 20  # how many page lines above the body's first paragraph hold its headline
_NEAR_LINES = 10  # ... and how many are "just above" it
_LEAD_MAX_CHARS = 120
_ANCHOR_MIN_CHARS = 20
_ANCHOR_MIN_LINE = 8
# Private-use characters: GB18030 decodes some characters (its user-defined area, a few
# ideographs) to the PUA. They are part of the title; the extraction library drops them from its
# text, so texts are compared without them.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
# What a template prints when its title variable is empty: no title.
_NO_TITLE = frozenset({"null", "undefined"})
_SENTENCE_END = re.compile(r"[。！？.!?…”\"’'）)]$")
_SENTENCE_MARK = re.compile(r"[，。；！？]|[,.;!?](?=\s|$)")

# Separators between a headline and the site/channel names in a <title>. A hyphen or dash splits
# when spaced ("Title - BBC News") or when it touches a CJK character ("标题-新华网"); an unspaced
# hyphen between Latin letters ("century-old") and a single em dash inside a Chinese headline
# ("对比试车—测试") do not.
_CJK = r"\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
_SEPARATOR = re.compile(
    r"\s*(?:_+|[|｜]+|[»>＞›]|::|-{2,}|\s[-–—~]\s"
    rf"|(?<=[{_CJK})）\]】])[-–](?=\S)|(?<=\S)[-–](?=[{_CJK}(（\[【]))\s*"
)
# A short segment ending like a portal, channel or publication name.
_SITE_WORD = re.compile(
    r"(?:网|網|频道|頻道|新闻|新聞|报|報|在线|日报|晚报|早报|周刊|中心|首页|资讯|博客|论坛|财经|门户"
    r"|娱乐|体育|科技|汽车|军事|房产|时尚|游戏|社区|贴吧"
    r"|\.com|\.cn|\.net|\.org|\bnews|\btimes|\bpost|\bonline|\bdaily|\bherald|\bjournal"
    r"|\btribune|\bgazette|\bmagazine|\bblog|\bpaper)\W*$",
    re.I,
)
# A short text holding a domain name ("CCTV.com- 央视论坛", "sina.com.cn") is a site name.
_DOMAIN = re.compile(r"[a-z0-9]\.(?:com|cn|net|org)\b", re.I)
_SITE_MAX_CHARS = 24  # a title part this short ending like a portal name is a site/channel name
_SHORT_PART = 12  # printed width (a CJK character counts 2) of a "short" title part
_SITE_NAME_MAX_CHARS = 10  # ... and a whole candidate this short (a logo <h1>, a bare-site <title>)

_META_TITLE_XPATH = etree.XPath(
    "//meta[@property='og:title' or @name='og:title' or @name='twitter:title'"
    " or @property='twitter:title' or @name='title' or @name='Title' or @name='ArticleTitle'"
    " or @name='articleTitle' or @name='articletitle' or @name='headline' or @name='Headline'"
    " or @name='parsely-title' or @name='sailthru.title' or @name='dc.title' or @name='DC.title'"
    " or @name='dcterms.title' or @itemprop='headline']"
)
_SITE_NAME_XPATH = etree.XPath(
    "//meta[@property='og:site_name' or @name='og:site_name' or @name='application-name'"
    " or @name='apple-mobile-web-app-title' or @name='twitter:site' or @name='publisher']/@content"
)
_TITLE_XPATH = etree.XPath("//title")
_H1_XPATH = etree.XPath("//h1")
_JSONLD_XPATH = etree.XPath("//script[@type='application/ld+json']/text()")
_TEXT_XPATH = etree.XPath(
    "//body//text()[not(ancestor::script or ancestor::style or ancestor::noscript"
    " or ancestor::template or ancestor::title or ancestor::select or ancestor::option)]"
)
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "strong", "b", "th", "font"})
# A heading by its class or id; "subject"/"topic" name a forum thread's or a blog post's heading
# (Discuz ``thread_subject``, ``post-subject``, ``topic-title``).
_HEADING_CLASS = re.compile(
    r"title|headline|heading|subject|topic|(?:^|[\s_-])(?:tit|bt|hd)(?:$|[\s_-])", re.I
)
_JUNK_HEADING = re.compile(
    r"^(?:首页|当前位置|您的位置|位置|正文|目录|返回|更多|相关|登录|注册|作者|来源|发布|时间|日期|编辑"
    r"|责任编辑|记者|原标题|标签|分享|评论|home\b|by\s|posted|updated|published|share\b)",
    re.I,
)
_DATE_LIKE = re.compile(
    r"(?:19|20)\d{2}\s*[-/年.]\s*\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.](?:19|20)\d{2}|\d{1,2}:\d{2}"
)


class _Line(NamedTuple):
    text: str
    heading: bool  # in a heading-like element and not in a link: may be a headline
    link: bool


@dataclass
class _Votes:
    score: float = 0.0
    forms: list[tuple[int, str]] = field(default_factory=list)  # (priority, surface text)
    kinds: set[str] = field(default_factory=set)


def _clean(text: str) -> str:
    return " ".join(text.split())


def usable_title(text: str | None) -> str | None:
    """``text`` with white space collapsed, or None when nothing is left or it is a template's
    placeholder for a missing title (``null``, ``undefined``, any case)."""
    if not text:
        return None
    text = _clean(text)
    return None if not text or text.lower() in _NO_TITLE else text


def same_headline(line: str, title: str) -> bool:
    """A text line that prints the title: equal up to white space at the ends and private-use
    characters (the extraction library drops them from the body, ``投身外交(3)\\ue004``)."""
    return _PRIVATE_USE.sub("", line).strip() == _PRIVATE_USE.sub("", title).strip()


@functools.lru_cache(maxsize=8192)  # a portal's menus and link lists repeat on every page
def _key(text: str) -> str:
    """Comparison key: width-folded, lower case, no spaces, quotes or trailing punctuation."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = re.sub(r"[\s\"'“”‘’「」『』\ue000-\uf8ff]+", "", t)
    return t.rstrip(".。,，:：;；!！?？…-_|")


def _width(text: str) -> int:
    """Printed width: a CJK character is as wide as two Latin letters."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _part_bounds(title: str) -> list[tuple[int, int]]:
    """(start, end) of each part of ``title`` between separators; the whole text when none."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    for m in _SEPARATOR.finditer(title):
        if m.start() > pos:
            bounds.append((pos, m.start()))
        pos = m.end()
    if pos < len(title):
        bounds.append((pos, len(title)))
    return bounds or [(0, len(title))]


def part_bounds(title: str) -> list[tuple[int, int]]:
    """(start, end) of each part of a ``<title>``-like text between its separators (``_``, ``|``,
    a spaced dash...; the whole text when it has none)."""
    return _part_bounds(title)


def site_name_metas(tree: lxml.html.HtmlElement) -> list[str]:
    """The site names a page declares (``og:site_name``, ``application-name``, ``publisher``...)."""
    names = _SITE_NAME_XPATH(tree)
    assert isinstance(names, list)
    return [str(n) for n in names]


def _site_like(part: str, site_keys: set[str]) -> bool:
    k = _key(part)
    if not k:
        return True
    if k in site_keys or any(s and (s in k or k in s) for s in site_keys if len(s) >= 3):
        return True
    return len(k) <= _SITE_MAX_CHARS and _SITE_WORD.search(part.strip()) is not None


def _markup_text(value: str) -> str:
    """Text of a meta value that holds markup (``标题<div>——副标题</div>``)."""
    if "<" not in value:
        return value
    try:
        return str(lxml.html.fromstring(f"<div>{value}</div>").text_content())
    except (etree.ParserError, ValueError):
        return value


def _jsonld_headlines(tree: lxml.html.HtmlElement) -> Iterator[str]:
    def walk(node: object, depth: int) -> Iterator[str]:
        if depth > 6:
            return
        if isinstance(node, dict):
            value = node.get("headline")
            if isinstance(value, str):
                yield value
            for v in node.values():
                if isinstance(v, (dict, list)):
                    yield from walk(v, depth + 1)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v, depth + 1)

    scripts = _JSONLD_XPATH(tree)
    assert isinstance(scripts, list)
    for raw in scripts:
        try:
            data = json.loads(str(raw))
        except (ValueError, RecursionError):
            continue
        yield from walk(data, 0)


def _is_heading(node: etree._Element) -> bool:
    """A text's element or one of its three nearest ancestors is a heading-like element."""
    el: etree._Element | None = node
    for _ in range(4):
        if el is None or not isinstance(el.tag, str):
            return False
        if el.tag in _HEADING_TAGS:
            return True
        if _HEADING_CLASS.search(f"{el.get('class') or ''} {el.get('id') or ''}"):
            return True
        if el.tag in {"p", "div", "td", "li", "body", "article", "section"}:
            return False
        el = el.getparent()
    return False


def _in_link(el: etree._Element) -> bool:
    """Inside a link and not inside an h1-h3 (a blog may link its headline to itself)."""
    link = False
    for anc in el.iterancestors():
        if anc.tag in ("h1", "h2", "h3"):
            return False
        if anc.tag == "a":
            link = True
    return link or el.tag == "a"


def _line(text: str, node: object) -> _Line:
    """A page line with whether it may be a headline: it sits in a heading-like element (h1-h3,
    bold, a ``title`` class...) and not in a link (the links around an article lead to other
    articles)."""
    parent = node.getparent() if hasattr(node, "getparent") else None
    if parent is not None and getattr(node, "is_tail", False):
        parent = parent.getparent()
    link = parent is not None and _in_link(parent)
    return _Line(text, parent is not None and _is_heading(parent) and not link, link)


def _page_lines(tree: lxml.html.HtmlElement) -> tuple[list[str], list[object]]:
    """Visible text nodes of the body, whitespace collapsed, in page order, and their nodes.

    Whether a line may be a headline is read (``_line``) only for the lines around the body's
    start, where the headline is looked for: walking every text's ancestors costs more than the
    rest of the title choice together.
    """
    texts: list[str] = []
    nodes: list[object] = []
    found = _TEXT_XPATH(tree)
    assert isinstance(found, list)
    for n in found:
        t = _clean(str(n))
        if t:
            texts.append(t)
            nodes.append(n)
    return texts, nodes


def _anchor(lines: list[str], body: str) -> int | None:
    """Index of the page line where the body's first real paragraph starts.

    A paragraph is a body line of some length ending like a sentence; lines the extractor kept
    from the page's chrome (a copyright line, a menu) usually do not.
    """
    squeezed = ["".join(ln.split()) for ln in lines]
    for raw in body.split("\n"):
        line = "".join(raw.split())
        if len(line) < _ANCHOR_MIN_CHARS or not (
            _SENTENCE_END.search(line) or len(_SENTENCE_MARK.findall(line)) >= 2
        ):
            continue
        probe = line[:12]
        for i, t in enumerate(squeezed):
            if len(t) >= _ANCHOR_MIN_LINE and (probe in t or line.startswith(t)):
                return i
    return None


def _lead_lines(texts: list[str], nodes: list[object], body: str) -> list[_Line]:
    """The page lines just above the body's first paragraph (where its headline is printed)."""
    start = _anchor(texts, body) if body else None
    if start is None:
        return []
    lo = max(0, start - _LEAD_LINES)
    return [_line(texts[i], nodes[i]) for i in range(lo, start + 1)]


def _is_lead_heading(text: str, heading: bool) -> bool:
    """A heading-like line shaped like a headline: no date line, label, sentence or menu."""
    return (
        heading
        and 4 <= len(text) <= _LEAD_MAX_CHARS
        and _JUNK_HEADING.match(text) is None
        and _DATE_LIKE.search(text) is None
        and not text.endswith(("。", ":", "：", "…", "...", "，", ",", "、", "；", ";"))
        and text.count("|") + text.count("｜") < 2
    )


def _is_site_name(k: str, v: _Votes, stripped: set[str], site_keys: set[str]) -> bool:
    """A candidate that is a site or channel name: a part cut off a title, ``og:site_name``, a
    short text ending like a portal or channel name, or a short text holding a domain."""
    text = min(v.forms)[1]
    return k in stripped or k in site_keys or (
        len(k) <= _SITE_NAME_MAX_CHARS and _SITE_WORD.search(text) is not None
    ) or (len(k) <= _SITE_MAX_CHARS and _DOMAIN.search(text) is not None)


def choose_title(
    tree: lxml.html.HtmlElement,
    body: str = "",
) -> str | None:
    """The title the page's candidates agree on; None when the page offers none.

    ``body`` is the extracted article text: the heading just above its first line is a candidate.
    """
    votes: dict[str, _Votes] = {}

    def vote(text: str, weight: float, kind: str, priority: int) -> None:
        text = _TRAILING_JUNK.sub("", _clean(text))
        k = _key(text)
        if len(k) < _MIN_KEY_CHARS or len(text) > _MAX_TITLE_CHARS or k in _NO_TITLE:
            return
        v = votes.setdefault(k, _Votes())
        if kind in v.kinds:  # one vote per source kind
            return
        v.kinds.add(kind)
        v.score += weight
        v.forms.append((priority, text))

    names = _SITE_NAME_XPATH(tree)
    assert isinstance(names, list)
    site_keys = {_key(str(s)) for s in names}
    site_keys.discard("")
    stripped: set[str] = set()  # site and channel names cut off the titles
    bare: set[str] = set()  # the widest part of a title whose other parts are all short

    def vote_title_like(text: str, weight: float, kind: str, priority: int) -> None:
        """Vote for the text without its leading/trailing site or channel parts, and its parts.

        The widest part is never cut: it is the headline more often than not.
        """
        text = _clean(text)
        if not text:
            return
        # a placeholder part ("undefined_示例新闻网") is no headline: the title is the rest
        bounds = [(a, b) for a, b in _part_bounds(text) if _key(text[a:b]) not in _NO_TITLE]
        if not bounds:
            return
        parts = [text[a:b] for a, b in bounds]
        widest = max(range(len(parts)), key=lambda i: _width(_key(parts[i])))  # the headline's
        lo, hi = 0, len(bounds)
        while hi - 1 != widest and _site_like(parts[hi - 1], site_keys):
            hi -= 1
            stripped.add(_key(parts[hi]))
        while lo != widest and _site_like(parts[lo], site_keys):
            stripped.add(_key(parts[lo]))
            lo += 1
        vote(text[bounds[lo][0] : bounds[hi - 1][1]], weight, kind, priority + 1)
        if hi - lo > 1 and all(
            _width(_key(parts[i])) <= _SHORT_PART for i in range(lo, hi) if i != widest
        ):
            bare.add(_key(_TRAILING_JUNK.sub("", _clean(parts[widest]))))
        for i in range(lo, hi):
            for j in range(i, hi):
                if (i, j) != (lo, hi - 1):
                    span = text[bounds[i][0] : bounds[j][1]]
                    if i == j == widest or not _site_like(span, site_keys):
                        vote(span, weight, kind, priority)

    title_els = _TITLE_XPATH(tree)
    assert isinstance(title_els, list)
    titles = [t for t in (_clean(el.text_content()) for el in title_els) if t]
    if titles:
        vote_title_like(titles[0], _W_TITLE, "title", 40)
    metas = _META_TITLE_XPATH(tree)
    assert isinstance(metas, list)
    for m in metas:
        name = (m.get("property") or m.get("name") or m.get("itemprop") or "").lower()
        content = m.get("content")
        if content:
            vote_title_like(_markup_text(content), _W_META, f"meta:{name}", 20)
    for h in _jsonld_headlines(tree):
        vote_title_like(h, _W_META, "jsonld", 15)
    h1s = _H1_XPATH(tree)
    assert isinstance(h1s, list)
    for i, h in enumerate(h1s[:5]):
        text = _clean(h.text_content())
        if text:
            vote(text, _W_HEADING, f"h1:{i}", 10)

    texts, nodes = _page_lines(tree)
    lead = _lead_lines(texts, nodes, body)
    heading = next(
        (t for i, (t, h, _) in reversed(list(enumerate(lead)))
         if _is_lead_heading(t, h) and not (i and lead[i - 1].text.endswith((":", "：")))),
        None,
    )  # the closest heading above the body that is not the value of a "来源：" field
    # Only site or channel names declared (a forum's or blog's <title> is often just that): the
    # page's layout is the only other witness of the subject.
    declared = any(not _is_site_name(k, v, stripped, site_keys) for k, v in votes.items())
    if heading is None and not declared and len(lead) >= 2:
        # No heading-like element: the line just above the body, when shaped like a headline
        # (even a link: some pages link the headline to the article itself).
        text = lead[-2].text
        if _is_lead_heading(text, True):
            heading = text
    if heading:
        vote(heading, _W_LEAD, "lead", 5)
    # A candidate printed on the page as a line of its own gets a little more, and more still when
    # that line is just above the body (where a headline is printed).
    shown = {_key(t) for t in texts}
    near = {_key(ln.text) for ln in lead[-_NEAR_LINES - 1 :]}
    for k, v in votes.items():
        if k in near:
            v.score += _W_NEAR
        if k in shown:
            v.score += _W_VISIBLE
        if k in bare:
            v.score += _W_BARE

    # A site or channel name (a part cut off a title, og:site_name, a short text ending like a
    # portal name) loses to any other candidate: it is how a logo <h1> or a bare-site <title> looks.
    for k, v in votes.items():
        if _is_site_name(k, v, stripped, site_keys):
            v.score -= _W_SITE_PENALTY

    if not votes:
        return None
    # Among equals, a text the page declares (title, meta, JSON-LD, h1) beats a layout guess, and
    # a longer text beats a shorter one (a channel or site name is shorter than a headline).
    best_key = max(votes, key=lambda k: (votes[k].score, votes[k].kinds != {"lead"}, _width(k)))
    # the form that keeps a private-use character some sources dropped (a CMS's og:title)
    return min(votes[best_key].forms,
               key=lambda f: (-len(_PRIVATE_USE.findall(f[1])), f))[1]
