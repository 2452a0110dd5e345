"""Boilerplate at a body's edges: disclaimers, copyright and ICP lines, report addresses, "related"
lists at its end; a date or info line (``发布时间：... 来源：... 作者：...``) at its start, and at
its end a copy of an info line printed above it.

The extraction library keeps such lines when the portal prints them inside the article container.
:data:`EDGE_PATTERNS` is the one table of them (``benchmarks/bench_extraction.py`` reports how
many bodies each pattern cut). :func:`trim_edges` cuts them only where they end a body: a line in
the middle of an article is never touched.
"""

from __future__ import annotations

import re

from newscrawl.extract.zh import clean_author

__all__ = ["EDGE_PATTERNS", "RELATED_HEADINGS", "is_sign_off_line", "trim_edges"]

# (name, pattern matched against one body line). A body's last line is cut while it matches one.
EDGE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # portal disclaimers and their English twins
    ("disclaimer", re.compile(
        r"^[【\[（(]?\s*(?:特别声明|免责声明|版权声明|郑重声明)\s*[】\])）]?\s*[:：]?"
        r"|^(?:Notice|Disclaimer)\s*[:：]\s*(?:The|This) (?:content|article|story)",
        re.I)),
    ("copyright", re.compile(
        r"^(?:copyright\b|©|\(c\)\s*\d|版权所有)|all rights reserved|版权所有",
        re.I)),
    ("icp", re.compile(r"ICP\s*[备证]|公网安备|网络文化经营许可证|新闻信息服务许可证")),
    ("report", re.compile(r"举报(?:邮箱|电话|热线)\s*[:：]|违法和不良信息举报")),
    ("page_tools", re.compile(
        r"^[【\[]?\s*(?:打印本页|关闭窗口|返回顶部|分享到|给编辑写信)|^-+\s*给编辑写信")),
)
# A heading that starts a list of links to other articles; the heading and what follows it are
# cut when everything after it is short lines (link texts), at the end of a body.
RELATED_HEADINGS = re.compile(
    r"^(?:相关(?:阅读|新闻|文章|内容|链接|报道|资讯|推荐)|延伸阅读|推荐阅读|推荐新闻|猜你喜欢|热门推荐"
    r"|精彩推荐|小编最近文章"
    r"|related(?: (?:articles?|stories|story|coverage|content|links|posts|reading))?"
    r"|read more|more from [\w .'-]{1,40}|see also|recommended(?: for you)?)\s*[:：]?\s*$"
    r"|^related\s*:",
    re.I,
)
# A date: 2026-11-25, 2026/11/25, 2026.11.25, 2026年11月25日.
_DATE = re.compile(
    r"(?:19|20)\d\d\s*(?:[-/.]\s*\d{1,2}\s*[-/.]\s*\d{1,2}|年\s*\d{1,2}\s*月\s*\d{1,2}\s*日)")
# What else a date line may hold: times, labels and their short values (a name, an outlet).
_DATELINE_REST = re.compile(
    r"^(?:[\s\d:：|｜/\-.()（）\[\]【】]"
    r"|(?:发布|更新|发表|来源|稿源|作者|记者|编辑|责任编辑|时间|日期|浏览|阅读|点击|字号|大|中|小)"
    r"(?:次数|量)?\s*[:：]?\s*[^\s:：|｜]{0,12})*$"
)
# A line of labelled fields and nothing else: "作者：记者王明", "来源：新华社 编辑：张三",
# "（责任编辑：李华）". A label needs its colon here (no date vouches for the line): "记者获悉" is
# running text. A value is a name or an outlet, not a sentence: an interview's first question
# ("记者：您怎么看？") has sentence punctuation.
_OUTLET_LABELS = frozenset({"来源", "稿源", "出处"})
_LABELS = "来源|稿源|出处|作者|记者|通讯员|摄影|责任编辑|编辑|责编"
# a field's value: no separator, no sentence punctuation
_VALUE = r"[^\s:：|｜()（）\[\]【】，。？！；、,?!;…“”\"]"


def _line_of(field: str) -> re.Pattern[str]:
    """A line of one or more ``field``s (in brackets or not) and nothing else."""
    return re.compile(rf"^[\s(（\[【]*{field}(?:[\s|｜/()（）\[\]【】]+{field})*[\s)）\]】]*$")


# one field: (label)(value); _LABEL_LINE repeats it, _is_label_line reads its groups
_LABEL_FIELD = re.compile(rf"({_LABELS})\s*[:：]\s*({_VALUE}{{1,12}})")
_LABEL_LINE = _line_of(_LABEL_FIELD.pattern)
_CJK_CHARS = "\u3400-\u4dbf\u4e00-\u9fff"
_SPACE = re.compile(r"\s+")
# A line holding only a reporters' byline, with or without a colon: labels and names, in brackets
# or after 本报讯, maybe ending with 报道.
_REPORTER_LABEL = r"(?:本报|本台|本刊|本网|特约|实习)?(?:记者|通讯员|实习生)"
_BYLINE_LINE = re.compile(
    rf"^(?:[^\s（(【\[]{{0,6}}讯)?[（(【\[]?\s*(?P<names>{_REPORTER_LABEL}\s*[:：]?\s*"
    rf"(?!报道)[{_CJK_CHARS}·]{{2,5}}"
    rf"(?:[\s、,，]+(?:{_REPORTER_LABEL}\s*[:：]?\s*)?(?!报道)[{_CJK_CHARS}·]{{2,5}})*)"
    r"\s*(?:报道)?\s*[）)】\]]?\s*(?:报道)?$"
)
_NAME_SPLIT = re.compile(rf"[\s、,，]+|{_REPORTER_LABEL}\s*[:：]?")
_BYLINE_CHARS = 40
# A date line is short; the first lines of a body are looked at, no more.
_DATELINE_CHARS = 80
_DATELINE_LINES = 2
# A line of a "related" list is short: a headline, not a paragraph.
_LIST_LINE_CHARS = 100
# How far from the end a "related" heading is looked for.
_RELATED_LINES = 15


def trim_edges(text: str, *, keep_chars: int = 0, above: str = "") -> tuple[str, list[str]]:
    """``text`` without the boilerplate lines that start or end it, and the names of what was cut.

    ``above``: the page text between the title and the body; a line of labelled fields that ends
    the body and repeats one printed there (or among the lines cut from its start) is a copy of
    the page's info line and is cut. Nothing is cut when less than ``keep_chars`` non-space
    characters would be left (a page whose only text is a disclaimer keeps it: no body is worse).
    """
    trimmed, cut = _trim(text, above)
    if keep_chars and len("".join(trimmed.split())) < keep_chars:
        return text, []
    return trimmed, cut


def _is_dateline(line: str) -> bool:
    """A line that only dates the article (and names its source or author): no body text."""
    line = line.strip()
    if not line or len(line) > _DATELINE_CHARS:
        return False
    date = _DATE.search(line)
    if date is None:
        return False
    return bool(_DATELINE_REST.match(line[: date.start()] + " " + line[date.end():]))


def _is_byline(line: str) -> bool:
    """A line that is a reporters' byline and nothing else (``本报记者 王明 通讯员 李华``,
    ``（记者 张强）``, ``本报讯（记者 王明）``, ``记者 王明 报道``): each name a name."""
    line = line.strip()
    m = _BYLINE_LINE.match(line) if len(line) <= _BYLINE_CHARS else None
    if m is None:
        return False
    names = [n for n in _NAME_SPLIT.split(m.group("names")) if n]
    return bool(names) and all(clean_author(name) == name for name in names)


# A sign-off's fields: the labels of _LABEL_FIELD and those of a portal's review line, any short
# value (a Latin user name too: "[责任编辑：alonliu]"); only read where no body text can be
# (outside the body's container: continuation.outside_tail).
_SIGN_OFF_LINE = _line_of(rf"(?:{_LABELS}|审核|审校|校对|初审|终审|复审|监制|主编|美编|制作|统筹)"
                         rf"\s*[:：]\s*{_VALUE}{{1,20}}")


def is_sign_off_line(line: str) -> bool:
    """A portal's sign-off line of labelled fields, any short values: ``[责任编辑：alonliu]``,
    ``编辑：王强 审核：刘洋``, ``（责任编辑：李明）``."""
    line = line.strip()
    return 0 < len(line) <= _DATELINE_CHARS and bool(_SIGN_OFF_LINE.match(line))


def _is_label_line(line: str, *, names: bool = False) -> bool:
    """A short line of labelled fields only (``作者：记者王明``, ``（责任编辑：李华）``).

    ``names``: a person's label must be followed by a name (``记者：请介绍一下`` is an
    interview's question)."""
    line = line.strip()
    if not 0 < len(line) <= _DATELINE_CHARS or not _LABEL_LINE.match(line):
        return False
    return not names or all(
        m.group(1) in _OUTLET_LABELS or clean_author(m.group(2)) is not None
        for m in _LABEL_FIELD.finditer(line)
    )


def _head(lines: list[str]) -> list[tuple[str, str]]:
    """The date and info lines that start a body: (what, line) for each, in order."""
    out: list[tuple[str, str]] = []
    for line in lines[: min(_DATELINE_LINES, len(lines) - 1)]:
        if _is_dateline(line):
            out.append(("dateline", line))
        elif _is_label_line(line, names=True) or _is_byline(line):
            # "作者：X" left as the body's first line by an info element the library split
            out.append(("infoline", line))
        else:
            break
    return out


def leading_info(text: str) -> str:
    """The date and info lines that start ``text`` (what :func:`trim_edges` cuts there): the
    page's own date line when the library kept it in the body."""
    return "\n".join(line for _, line in _head(text.split("\n")))


def _trim(text: str, above: str = "") -> tuple[str, list[str]]:
    lines = text.split("\n")
    head = _head(lines)
    del lines[: len(head)]
    cut = [what for what, _ in head]
    printed = _SPACE.sub("", above + "".join(line for _, line in head))
    while lines:
        last = lines[-1].strip()
        if len(lines) > 1 and printed and _is_label_line(last) and _SPACE.sub("", last) in printed:
            # the library repeats the parts of an info element after the body
            lines.pop()
            cut.append("infoline_copy")
            continue
        name = next((n for n, p in EDGE_PATTERNS if p.search(last)), None)
        if name is not None:
            lines.pop()
            cut.append(name)
            continue
        start = max(0, len(lines) - _RELATED_LINES)
        heading = next(
            (i for i in range(len(lines) - 1, start - 1, -1)
             if RELATED_HEADINGS.search(lines[i].strip())
             and all(len(ln.strip()) <= _LIST_LINE_CHARS for ln in lines[i + 1 :])),
            None,
        )
        if heading is not None and heading > 0:
            del lines[heading:]
            cut.append("related")
            continue
        break
    return "\n".join(lines), cut
