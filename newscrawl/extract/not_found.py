"""Whether an extracted page is a portal's "page not found" served with HTTP 200 (a soft 404).

Portals often answer a removed or not yet published article with ``200 OK`` and a page of their
own: ``抱歉，您访问的页面不存在``, ``404 很抱歉！您要查看的文章已被删除``, ``Page not found``. Its
few sentences pass as an article body, so without this check it would be stored (and, being the
same on every missing page, drop later missing pages as its near-duplicates).

:func:`not_found_phrase` gives the phrase that marks such a page, or None. A page is one when
all of these hold, so that a short news item *about* a missing page is not taken for one:

* its text is short (at most :data:`MAX_NOT_FOUND_CHARS` non-space characters);
* its title or one of the first lines of its text says so, not in quotation marks: the reader
  addressed about the page (``您访问的页面``, ``the page you requested``), ``页面不存在``,
  ``找不到该页面``, ``Page not found``, a bare ``404``;
* its text tells the reader where to go instead, as error pages do and news does not:
  ``返回首页``, ``5秒后自动跳转``, ``请检查网址``, ``go back to the home page``.

Imports no scrapy.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NOT_FOUND_CHARS", "not_found_phrase"]

#: A text with more non-space characters than this is read as an article, whatever it says.
MAX_NOT_FOUND_CHARS = 300
#: How many of the text's first lines are read (a title above the message, the message).
_LINES = 3

_THING = r"(?:页面|网页|网址|链接|文章|内容|新闻|稿件|信息|资讯|帖子|专题)"
_PAGE = r"(?:页面|网页|网址|链接|文章|稿件|帖子)"  # what only a page says of itself
_PATTERNS = [
    # the reader addressed about the page: 您访问的页面, 你要查看的文章, 您所请求的网页
    rf"[您你]所?(?:要|想|正在)?(?:访问|查看|浏览|请求|查找|寻找|打开)的{_THING}",
    rf"{_PAGE}(?:已经|已)?(?:被)?(?:删除|下线|撤[销回下]|移除|走丢|丢失)?了?(?:或|或者|、)?不存在",
    rf"(?:找不到|未找到|无法找到|没有找到)(?:该|此|这个|您要的|你要的)?{_PAGE}",
    r"页面(?:已经|已)?(?:被)?(?:删除|走丢|丢失|出错|失效)",
    r"^\s*(?:错误|error)?\s*404\b",
    r"\b404\s*(?:错误|页面|error|not\s+found)",
    r"\bpage\s+(?:was\s+)?(?:not\s+found|cannot\s+be\s+found|could\s+not\s+be\s+found"
    r"|doesn'?t\s+exist|does\s+not\s+exist|no\s+longer\s+exists)",
    r"\b(?:can'?t|cannot|could\s*n[o']t|could\s+not)\s+(?:find|locate)\s+(?:that|the|this)\s+page",
    r"\bthe\s+page\s+you\s+(?:are|were|'re)?\s*(?:looking\s+for|requested|tried)",
    r"^\s*not\s+found\s*$",
]
_NOT_FOUND = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.I | re.M)
# What an error page tells its reader to do instead.
_ADVICE = re.compile(
    r"返回首页|回到首页|返回上一?页|回首页|去首页|进入首页|秒(?:钟)?后(?:自动)?(?:跳转|返回)|自动跳转"
    r"|检查.{0,8}(?:网址|地址|链接|url)|(?:网址|地址|链接).{0,6}(?:有误|错误|是否正确)"
    r"|\b(?:go|get|head)\s+back\s+to\b|\breturn\s+to\s+(?:the|our)\s+home"
    r"|\b(?:visit|go\s+to)\s+(?:the|our)\s+home\s*page"
    r"|\bcheck\s+the\s+(?:address|url|spelling|link)|\byou\s+will\s+be\s+redirected",
    re.I,
)
# An opening quotation mark just before a phrase: quoted, the phrase is what a news item reports.
_QUOTES = "“「『\"'‘《〈«"
_SPACE = re.compile(r"\s+")


def not_found_phrase(title: str | None, text: str) -> str | None:
    """The phrase that makes this title and text a "page not found", or None for an article.

    >>> not_found_phrase("抱歉，您访问的页面不存在", "请检查网址是否正确，或者返回首页。")
    '您访问的页面'
    >>> not_found_phrase("示例新闻网", "404\\n很抱歉！您要查看的文章已被删除。您可以返回首页。")
    '404'
    >>> not_found_phrase("“404页面”变身寻人启事", "多家网站把404页面改成寻人启事。请返回首页查看。")
    >>> not_found_phrase("网站改版", "本站页面已全面改版。" * 60) is None
    True
    """
    if len(_SPACE.sub("", text)) > MAX_NOT_FOUND_CHARS or not _ADVICE.search(text):
        return None
    head = "\n".join(text.split("\n", _LINES)[:_LINES])
    for part in (title or "", head):
        for found in _NOT_FOUND.finditer(part):
            before = part[max(0, found.start() - 2):found.start()]
            if not any(mark in before for mark in _QUOTES):
                return found.group(0).strip()
    return None
