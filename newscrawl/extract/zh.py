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
_NAME = rf"[{_CJK}][{_CJK}·]{{1,3}}"
_END = r"(?=$|[\s)）\]】/|,，、。;；:：<>\d]|摄|报道|编辑|来源|发布|发表)"
_NAMES = rf"{_NAME}{_END}(?:[ \t、,，]+{_NAME}{_END})*"
_LATIN_NAME = r"[A-Za-z][\w.\-]*(?: [A-Z][\w.\-]*){0,3}"

# (pattern, weight) in order of preference; the first pattern that matches wins.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(rf"作\s*者\s*[:：]?\s*[\[【(（]?\s*({_NAMES}|{_LATIN_NAME})"),
    re.compile(rf"[（(]\s*[{_CJK}]{{0,8}}?记者\s*({_NAMES})\s*[)）]"),
    re.compile(rf"记者\s*[:：]?\s*({_NAMES})"),
    re.compile(rf"(?:^|\s)文\s*[/／|]\s*({_NAMES})"),
    re.compile(rf"(?:责任)?编辑\s*[:：]\s*({_NAMES}|{_LATIN_NAME})"),
)


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the non-space characters of ``text``."""
    chars = [c for c in text[:5000] if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if "\u4e00" <= c <= "\u9fff") / len(chars)


def _clean(names: str) -> str:
    return " ".join(re.split(r"[\s、,，]+", names.strip()))


def author_from_lines(*zones: str) -> str | None:
    """The first byline found, trying each pattern over all zones before the next pattern."""
    for pattern in _PATTERNS:
        for zone in zones:
            if not zone:
                continue
            m = pattern.search(zone)
            if m:
                return _clean(m.group(1))
    return None
