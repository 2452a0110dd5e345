"""The outlet a page says its text comes from (``来源：新华社``), or None.

Portals that reprint print where the text comes from: ``来源：新华社``, ``稿源：``,
``（转自人民日报）``, ``本文来自…``, ``Source: Reuters``, an element marked ``source`` above the
body, ``<meta name="source">``, JSON-LD ``sourceOrganization`` or ``isBasedOn``. :func:`find_source`
reads these cues in the text around the article body (the zones the byline is read from), then in
the page's metadata, cleans the value to the outlet's name (``来源：新华社 作者：张三`` ->
``新华社``, ``人民网-人民日报`` -> ``人民网``) and gives None when the page names no outlet or
names itself (its host, ``og:site_name``, the site part of its
``<title>``, the name in its copyright line: ``来源：新华网`` on xinhuanet is not a reprint).

The first cue whose value is a name decides: a value that names the page's own site gives None,
a value that is not a name (``来源：转载``, an empty ``来源：``) is skipped. Imports no scrapy.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

from newscrawl.extract._jsonld import page_objects
from newscrawl.extract.title import part_bounds, site_name_metas

__all__ = ["clean_source", "clean_whole", "find_source"]

_CJK = "\u4e00-\u9fff"
# Words that may stand right before a label ("本文来源：", "新闻来源："). Any other ideograph there
# makes the label part of running text or another kind of source ("数据来源：", "图片来源：",
# "素材来源", "资料来源：", "收入来源"): not where the text comes from.
_LABEL_PREFIX = r"(?:本文|文章|此文|稿件|新闻|信息|消息|内容)"
_SPACE = r"[ \t\u3000\xa0]"
# A label and its separator. 来源/稿源/出处 need a colon-like separator or a space on the same
# line ("来源 新华社"); 转自/转载自/本文来自 are followed by the name itself ("转自甲网").
_CUE = re.compile(
    rf"(?:(?<![{_CJK}])|(?<={_LABEL_PREFIX}))"
    rf"(?:(?:来{_SPACE}*源|稿{_SPACE}*源|出{_SPACE}*处)(?:于)?"
    rf"(?:{_SPACE}*[:：︰︱|｜]{_SPACE}*\n?|{_SPACE}+(?=[^\s:：]))"
    rf"|(?:转载?自|本文来自|文章来自)(?:{_SPACE}*[:：]{_SPACE}*\n?|{_SPACE}*))"
    r"|(?<![A-Za-z])(?:Source|SOURCE)[ \t]*:[ \t]*(?=\S)",
)
# A nested cue inside a value: "乙网（转自甲网）", "来源：人民网（来源：人民日报）".
_NESTED = re.compile(r"[(（\[【]\s*(?:转载?自|来\s*源\s*[:：]|稿\s*源\s*[:：])\s*([^)）\]】]+)")
# A line whose cue belongs to a disclaimer ("免责声明：本文来自…自媒体，不代表…观点").
_DISCLAIMER = re.compile(r"声明|免责|版权|不代表|观点|立场|授权|侵权|联系")
_VALUE_CHARS = 60
# Where a value stops: the next label ("作者：", "编辑:", "发布时间"), a date, a separator.
_VALUE_END = re.compile(
    r"(?:作\s*者|记\s*者|编\s*辑|责任编辑|责编|发布时间|发布|时间|日期|浏览|阅读|点击|字号|分享"
    rf"|评论|通讯员|摄\s*影|来\s*源|原标题|标签|关键词|作者单位){_SPACE}*[:：]"
    r"|(?:本报|特约|首席|见习|实习)?记者|通讯员"  # "来源：新华社记者张三"
    r"|(?:19|20)\d{2}\s*[-/年.]"
    r"|[|｜丨/／\\，,。；;！!？?、…:：]"
    rf"|[(（]|(?<=[{_CJK}]){_SPACE}|{_SPACE}{{2,}}"
    r"|$",
    re.M,
)
# An outlet name followed by its channel ("人民网-文化频道", "澎湃新闻·澎湃号·政务",
# "新浪财经-自媒体综合"): the outlet is the first part. An unspaced hyphen inside a Latin name
# ("Al-Monitor") is not a separator.
_CHANNEL_SEPARATOR = re.compile(rf"\s*(?:[·•_—–]|(?<=[{_CJK}])-|-(?=[{_CJK}])|\s-\s)\s*")
_QUOTES = "\"'“”‘’「」『』《》〈〉[]【】()（）<>@＠"
_BLANK = " \t\u3000\xa0"
# How an app, account or column is printed after the outlet's name.
_SUFFIXES = re.compile(
    r"(?:客户端|手机版|移动版|官方微博|官方微信|微信公众号|公众号|官网|APP|App|app)$")
_PREFIXES = re.compile(
    r"^(?:微信公众号|公众号|微信号|微博|头条号|百家号|企鹅号|搜狐号|网易号)[:：\s]*")
# Values that name the page itself ("本网", "本站", "原创"): the page is the source.
_SELF = re.compile(
    r"^(?:本网|本站|本报|本台|本刊|本网站|本频道|本社|原创|独家|原创稿|本网原创|本站原创)")
# Values that are no outlet (a remark on how the text was obtained, an empty field's filler).
_NOT_OUTLETS = frozenset({
    "转载", "转载文章", "网络", "互联网", "网络转载", "网友", "网友投稿", "投稿", "来稿", "供稿",
    "未知", "佚名", "不详", "无", "暂无", "其他", "其它", "综合", "整理", "网络整理", "综合整理",
    "编辑", "作者", "来源", "自媒体", "网络综合", "综合报道", "媒体", "网上", "网摘", "资料",
    "unknown", "none", "null", "undefined", "internet", "supplied", "file", "handout", "various",
    "agencies", "staff", "wire", "wires", "getty", "getty images", "ap photo", "afp photo",
    "screenshot", "twitter", "facebook", "instagram", "youtube", "wikipedia", "shutterstock",
})
_MAX_CJK = 16
_MAX_LATIN = 40
_LATIN_NAME = re.compile(r"[A-Z0-9][\w&.'’-]*(?:\s+(?:[A-Z0-9&][\w&.'’-]*|of|the|and|de|du))*")
_CJK_NAME = re.compile(rf"[{_CJK}A-Za-z0-9·.&]+")
_NOT_IN_NAMES = frozenset("我你您他她它们的了吗呢吧啊么这那请是在有")

# In the head only: reading the whole tree for it costs a fifth of the source pass.
_META_SOURCE_XPATH = etree.XPath(
    "/html/head/meta[@name='source' or @name='Source' or @name='SOURCE'"
    " or @property='article:source' or @name='article:source' or @name='og:source'"
    " or @name='ContentSource'"
    " or @name='contentSource']/@content"
)
_META_LABEL = re.compile(r"^(?:来\s*源|稿\s*源|出\s*处)\s*[:：]\s*")
_JSONLD_XPATH = etree.XPath("//script[@type='application/ld+json']/text()")
# JSON-LD keys whose objects are another work than the page (its publisher is not the site).
_NOT_THE_PAGE = frozenset({"isBasedOn", "sourceOrganization", "citation", "mentions", "about",
                           "itemReviewed", "publisher"})
# An element the page marks as its source (sina's ``<a class="source">``, ``<em id="source">``,
# ``<span class="a_source">``): a class or id token ``source`` or ending in ``-source``/``_source``.
_SOURCE_ELEMENT_XPATH = etree.XPath(
    "//body//*[contains(@class, 'source') or contains(@id, 'source')]"
)
_SOURCE_TOKEN = re.compile(r"(?:^|[\s_-])source(?:$|\s)", re.I)
_SOURCE_ELEMENT_CHARS = 30
_IDEOGRAPH = re.compile(f"[{_CJK}]")
_CAPTION = re.compile(r"figure|figcaption|caption|photo|image|img|pic|credit|media|video", re.I)
_PUBLISHER_NAME = re.compile(r'"publisher"\s*:\s*\{[^{}]*?"name"\s*:\s*"([^"]{1,80})"')
# The name in a copyright line, before or after 版权所有 ("网易公司版权所有", "版权所有：新华网"),
# read in a window around each 版权所有 of the page text.
_COPYRIGHT = "版权所有"
_BEFORE_COPYRIGHT = re.compile(rf"([{_CJK}A-Za-z0-9]{{2,16}}?)(?:公司|集团|网站)?{_SPACE}*\Z")
_AFTER_COPYRIGHT = re.compile(
    rf"^{_SPACE}*[:：]?{_SPACE}*(?:©\s*)?(?:\d{{4}}(?:-\d{{4}})?{_SPACE}*)?([{_CJK}A-Za-z0-9]{{2,16}})")
_COPYRIGHT_WINDOW = 24
_COPYRIGHT_LINES = 3  # the first few copyright lines of a page (its own footer among them)
# A link home ("网易首页", "新浪首页") names the site.
_HOME = "首页\n"
_HOME_NAME = re.compile(rf"(?:^|\n)([{_CJK}A-Za-z0-9]{{2,8}})\Z")
_HOME_LINKS = 3
# Host labels that name no site.
_HOST_WORDS = frozenset({"www", "m", "wap", "news", "en", "cn", "com", "net", "org", "gov", "edu",
                         "co", "ac", "int", "info", "biz", "mil", "uk", "hk", "tw", "us", "au",
                         "example", "localhost", "html", "article", "articles", "static"})
# What follows an outlet's name to say what kind of outlet it is (新华社, 新华网).
_OUTLET_KINDS = frozenset({
    "网", "社", "报", "日报", "晚报", "早报", "报社", "网站", "新闻", "新闻网", "在线", "客户端",
    "电视台", "台", "频道", "传媒", "集团", "报业集团", "杂志", "周刊", "官网", "中文网", "日报社",
    "新闻社", "通讯社"})
# Leading words several unrelated outlets share: a common start made of one of these alone does
# not make two names one outlet (中国日报 is not 中国青年网).
_GENERIC_PREFIXES = frozenset({
    "中国", "中华", "全国", "国际", "环球", "新闻", "华夏", "东方", "南方", "北方", "财经", "科技",
    "经济", "法制"})


def _norm(text: str) -> str:
    """Comparison key: width-folded, lower case, no spaces or punctuation."""
    t = unicodedata.normalize("NFKC", text).lower()
    return re.sub(r"[\W_]+", "", t)


def clean_source(value: str | None) -> str | None:
    """The outlet's name in a source field's value, or None when it names none.

    ``新华社 作者：张三`` -> ``新华社``; ``人民网-人民日报`` -> ``人民网``;
    ``新华网 | 2024-03-15`` -> ``新华网``; ``[国际金融报]`` -> ``国际金融报``;
    ``乙网（转自甲网）`` -> ``甲网`` (a nested cue names where the reprinted text comes from).
    A value naming the page itself (``本网``, ``原创``) gives ``""``: the caller stops there.
    A value printed on the line after its label ("来源：\\n新华网") must be that whole line.
    """
    if not value:
        return None
    value = value[:_VALUE_CHARS]
    first, sep, rest = value.partition("\n")
    first = _PREFIXES.sub("", first.strip(_QUOTES + _BLANK + ":："))
    if first:
        return _clean_line(first)
    # the value is alone on one of the next lines ("来源：[\n国际金融报\n]")
    lines = [ln.strip(_QUOTES + _BLANK) for ln in rest.split("\n")[:2]]
    line = next((ln for ln in lines if ln), "")
    if line.endswith((":", "：")):
        return None  # the next field's label ("来源：\n分享到：")
    return clean_whole(line)


def _clean_line(value: str) -> str | None:
    nested = _NESTED.search(value)
    if nested is not None:
        inner = clean_source(nested.group(1))
        if inner:
            return inner
    m = _VALUE_END.search(value, 1)
    if m is not None:
        value = value[: m.start()]
    return clean_whole(value)


def clean_whole(value: str) -> str | None:
    """A text that is an outlet's name as a whole (an element holding only the name, the line
    after a label), channel and app suffixes cut off; None when it is not a name."""
    value = _PREFIXES.sub("", value.strip(_QUOTES + _BLANK))
    value = _CHANNEL_SEPARATOR.split(value, maxsplit=1)[0]
    value = value.strip(_QUOTES + _BLANK + ".:：-")
    value = _SUFFIXES.sub("", value).strip(_QUOTES + _BLANK)
    if not value:
        return None
    if _SELF.match(value):
        return ""
    return value if _is_name(value) else None


def _is_name(value: str) -> bool:
    """An outlet's name: Chinese (2-16 characters, no pronoun or particle) or Latin (capitalised
    words), and not a word such as ``转载`` or ``网络``."""
    if _norm(value) in _NOT_OUTLETS or value.lower() in _NOT_OUTLETS:
        return False
    cjk = sum(1 for c in value if "\u4e00" <= c <= "\u9fff")
    if cjk:
        return (2 <= len(value) <= _MAX_CJK and _CJK_NAME.fullmatch(value) is not None
                and not any(c in _NOT_IN_NAMES for c in value))
    return (2 <= len(value) <= _MAX_LATIN and _LATIN_NAME.fullmatch(value) is not None
            and re.search(r"[A-Za-z]{2}", value) is not None)


# ------------------------------------------------------------------ the page's own names --------


def _host_names(url: str) -> set[str]:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return set()
    if not host or re.fullmatch(r"[\d.]+|\[?[0-9a-f:]+\]?", host):
        return set()  # an IP address names no site
    return {label for label in host.split(".") if label and label not in _HOST_WORDS}


class _SiteNames:
    """The names a page gives its own site, read the first time a source is checked."""

    def __init__(self, tree: lxml.html.HtmlElement, url: str, page_text: str) -> None:
        self._tree = tree
        self._url = url
        self._page_text = page_text
        self._keys: list[str] | None = None
        self._hosts: set[str] | None = None

    def _read(self) -> list[str]:
        names: list[str] = site_name_metas(self._tree)
        title_el = self._tree.find(".//title")
        if title_el is not None:
            title = re.sub(r"\s+", " ", title_el.text_content()).strip()
            bounds = part_bounds(title)
            if len(bounds) > 1:
                parts = [title[a:b] for a, b in bounds]
                widest = max(range(len(parts)), key=lambda i: len(_norm(parts[i])))
                names += [p for i, p in enumerate(parts) if i != widest]
        for script in _JSONLD_XPATH(self._tree):
            names += _own_publishers(str(script))
        names += _copyright_names(self._page_text) + _home_names(self._page_text)
        # a name with a bracketed remark ("乙网（转自甲网）", "新浪网(北京)") is the part before it
        return [k for k in (_norm(re.split(r"[(（\[【]", n, maxsplit=1)[0]) for n in names) if k]

    def names_itself(self, source: str) -> bool:
        if self._keys is None:
            self._keys = self._read()
            self._hosts = _host_names(self._url)
        s = _norm(source)
        if not s:
            return True
        assert self._hosts is not None
        if s.isascii() and any(h == s or (len(h) >= 4 and (h in s or s in h))
                               for h in self._hosts):
            return True
        for k in self._keys:
            if k == s or (len(k) >= 3 and k in s) or (len(s) >= 3 and s in k):
                return True
            if _same_brand(s, k):
                return True
        return False


def _copyright_names(text: str) -> list[str]:
    out: list[str] = []
    at = text.find(_COPYRIGHT)
    while at >= 0 and len(out) < 2 * _COPYRIGHT_LINES:
        before = _BEFORE_COPYRIGHT.search(text, max(0, at - _COPYRIGHT_WINDOW), at)
        if before is not None:
            out.append(before.group(1))
        end = at + len(_COPYRIGHT)
        after = _AFTER_COPYRIGHT.match(text[end : end + _COPYRIGHT_WINDOW])
        if after is not None:
            out.append(after.group(1))
        at = text.find(_COPYRIGHT, end)
    return out


def _home_names(text: str) -> list[str]:
    out: list[str] = []
    at = text.find(_HOME)
    while at >= 0 and len(out) < _HOME_LINKS:
        m = _HOME_NAME.search(text, max(0, at - 9), at)
        if m is not None:
            out.append(m.group(1))
        at = text.find(_HOME, at + len(_HOME))
    return out


def _own_publishers(raw: str) -> list[str]:
    """The publisher names of a JSON-LD block, not those of the work it is based on."""
    if "isBasedOn" not in raw and "sourceOrganization" not in raw:
        return _PUBLISHER_NAME.findall(raw)  # the common case, without decoding the block
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    out: list[str] = []
    for node in page_objects(data, _NOT_THE_PAGE):
        out += _org_names(node.get("publisher"))
    return out


def _same_brand(a: str, b: str) -> bool:
    """Two Chinese names of one outlet: a common start of two ideographs or more followed in both
    by nothing or a word for a kind of outlet (新华社 / 新华网, 人民日报 / 人民网, 云南日报 /
    云南日报网, 网易商业报道 / 网易), the start not being a word many outlets share (中国, 环球...).
    巴彦淖尔日报 and 巴彦淖尔市人民政府网 share a place name, not an outlet."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    if n < 2 or not all("\u4e00" <= c <= "\u9fff" for c in a[:n]) or a[:n] in _GENERIC_PREFIXES:
        return False
    rest_a, rest_b = a[n:], b[n:]
    if not rest_a or not rest_b:
        return True
    return rest_a in _OUTLET_KINDS and rest_b in _OUTLET_KINDS


# ------------------------------------------------------------------ the cues ----------------------


def _text_cues(zones: Iterable[str]) -> Iterator[str]:
    """The values after each source label in the zones, in order."""
    for zone in zones:
        if not zone:
            continue
        for m in _CUE.finditer(zone):
            line_start = zone.rfind("\n", 0, m.start()) + 1
            if _DISCLAIMER.search(zone, line_start, m.start()):
                continue
            value = zone[m.end() : m.end() + _VALUE_CHARS]
            if m.group(0).lstrip().startswith(("Source", "SOURCE")):
                value = value.split("\n", 1)[0]  # an English value on the label's own line only
            rest = value.split("\n", 1)[0]
            if _DISCLAIMER.search(rest):
                continue
            yield value


def _jsonld_sources(tree: lxml.html.HtmlElement) -> Iterator[str]:
    """``sourceOrganization`` names and the publisher of an ``isBasedOn`` work, page's own
    JSON-LD only (a block that does not mention them is not decoded)."""
    scripts = _JSONLD_XPATH(tree)
    assert isinstance(scripts, list)
    for raw in scripts:
        text = str(raw)
        if "sourceOrganization" not in text and "isBasedOn" not in text:
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            continue
        for node in page_objects(data, _NOT_THE_PAGE):
            yield from _org_names(node.get("sourceOrganization"))
            based = node.get("isBasedOn")
            for work in based if isinstance(based, list) else [based]:
                if isinstance(work, dict):
                    yield from _org_names(work.get("publisher"))
                    yield from _org_names(work.get("sourceOrganization"))


def _org_names(value: object) -> list[str]:
    """The name of an organisation given as a string, an object with a ``name``, or a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        name = value.get("name")
        return [name] if isinstance(name, str) else []
    if isinstance(value, list):
        return [n for v in value for n in _org_names(v)]
    return []


def _element_sources(tree: lxml.html.HtmlElement, zone: str) -> Iterator[str]:
    """The text of each element marked as the source whose text is printed in ``zone`` (the
    lines between title and body: a list of other articles with their sources is elsewhere)."""
    if not _IDEOGRAPH.search(zone):
        return  # an element's text must be printed there (and be a Chinese name)
    found = _SOURCE_ELEMENT_XPATH(tree)
    assert isinstance(found, list)
    for el in found:
        marks = f"{el.get('class') or ''} {el.get('id') or ''}"
        if not _SOURCE_TOKEN.search(marks):
            continue
        text = re.sub(r"\s+", " ", el.text_content()).strip()
        if (text and len(text) <= _SOURCE_ELEMENT_CHARS and _IDEOGRAPH.search(text)
                and text in zone and not _in_caption(el)):
            yield text


def _in_caption(el: etree._Element) -> bool:
    """In a picture's caption or credit (``<figure>``, a ``caption``/``photo`` class): the source
    named there is the picture's."""
    node: etree._Element | None = el
    for _ in range(4):
        node = node.getparent() if node is not None else None
        if node is None:
            return False
        marks = f"{node.tag} {node.get('class') or ''} {node.get('id') or ''}"
        if _CAPTION.search(marks):
            return True
    return False


def find_source(
    tree: lxml.html.HtmlElement,
    url: str,
    *,
    before: str = "",
    head: str = "",
    tail: str = "",
    after: str = "",
    page_text: str = "",
) -> str | None:
    """The outlet the page names as its text's source; None when it names none or itself.

    ``before``/``head``/``tail``/``after``: the page text just above the body, the body's first
    and last lines, the page text just below the body (as for bylines); they are searched in that
    order, then ``<meta name="source">``, then JSON-LD ``sourceOrganization``/``isBasedOn``.
    ``page_text`` (the page's visible text) gives the names in its copyright line and home link.
    """
    names = _SiteNames(tree, url, page_text)

    def candidates() -> Iterator[str | None]:
        yield from map(clean_source, _text_cues((before, head, tail, after)))
        yield from map(clean_whole, _element_sources(tree, before))
        metas = _META_SOURCE_XPATH(tree)
        assert isinstance(metas, list)
        for meta in metas:
            # the field may repeat the label ("来源：人民网-文化频道 原创稿")
            yield clean_source(_META_LABEL.sub("", str(meta).strip()))
        yield from map(clean_whole, _jsonld_sources(tree))

    for source in candidates():
        if source is None:
            continue  # not a name: the next cue may give one
        if source == "" or names.names_itself(source):
            return None
        return source
    return None
