"""Chinese byline patterns that the extraction library misses.

Portals print the author in the text around the article, not in metadata: ``作者：张三``,
``（记者 李四）``, ``本报记者 王五``, ``文/赵六``, ``责任编辑：孙七``. :func:`author_from_lines`
looks for them in the text just before and just after the article body.
"""

from __future__ import annotations

import re

__all__ = ["author_from_lines", "cjk_share"]

_CJK = r"\u4e00-\u9fff"
# A Chinese name: 2-4 ideographs (middle dot allowed for transliterated names), ending at a
# delimiter so that "记者 张三报道" does not swallow the following word.
_NAME = rf"(?![们的在是说了表称问从对向将也都和与就被把这那近日从])[{_CJK}][{_CJK}·]{{1,3}}"
_END = r"(?=$|[\s)）\]】/|,，、。;；:：<>\d]|摄|报道|编辑|来源|发布|发表)"
_NAMES = rf"{_NAME}{_END}(?:[ \t、,，]+{_NAME}{_END})*"
_LATIN_NAME = r"[A-Za-z][\w.\-]*(?: [A-Z][\w.\-]*){0,3}(?![\w=\"'])"

# Words that follow a byline label but are not names ("作者：责任编辑：张三").
_NOT_NAMES = frozenset({"作者", "记者", "编辑", "责任编辑", "来源", "本报", "通讯员", "实习生",
                        "摄影", "手记", "校对", "审核", "发布", "时间", "日期", "未知", "佚名"})

# Patterns in order of preference, each with the zones it applies to (see author_from_lines).
# The first pattern that matches wins.
_PATTERNS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(rf"作\s*者\s*[:：︱|]?[ \t]*[\[【(（]?[ \t]*({_NAMES}|{_LATIN_NAME})"),
     frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"[（(]\s*[{_CJK}]{{0,8}}?记者\s*({_NAMES})\s*[)）]"),
     frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"记者\s*[:：]?\s*({_NAMES})"), frozenset({"before", "head", "tail", "after"})),
    (re.compile(rf"(?:^|\s)文\s*[/／|]\s*({_NAMES})"), frozenset({"before", "head", "tail"})),
    (re.compile(rf"(?:责任)?编辑\s*[:：]\s*({_NAMES}|{_LATIN_NAME})"),
     frozenset({"before", "head", "tail", "after"})),
)


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the non-space characters of ``text``."""
    chars = [c for c in text[:5000] if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if "\u4e00" <= c <= "\u9fff") / len(chars)


def _clean(names: str) -> str:
    return " ".join(re.split(r"[\s、,，]+", names.strip()))


def author_from_lines(
    *, before: str = "", head: str = "", tail: str = "", after: str = ""
) -> str | None:
    """The first byline found, trying each pattern over its zones before the next pattern.

    Zones: ``before`` (page text between title and body), ``head`` / ``tail`` (first / last
    lines of the body), ``after`` (page text just below the body).
    """
    zones = {"before": before, "head": head, "tail": tail, "after": after}
    for pattern, where in _PATTERNS:
        for name in ("before", "head", "tail", "after"):
            zone = zones[name]
            if name not in where or not zone:
                continue
            for m in pattern.finditer(zone):
                names = _clean(m.group(1))
                if names and names.split()[0] not in _NOT_NAMES:
                    return names
    return None
